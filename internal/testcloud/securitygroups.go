package testcloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/google/uuid"
)

// SecurityGroup is a Neutron security group as the stand-in holds it.
type SecurityGroup struct {
	ID, Name, Description, ProjectID string
}

func securityGroupView(g *SecurityGroup) map[string]any {
	return map[string]any{"id": g.ID, "name": g.Name, "description": g.Description, "project_id": g.ProjectID,
		"tenant_id": g.ProjectID, "security_group_rules": []any{}, "stateful": true, "tags": []string{}}
}

// securityGroupRoutes serve Neutron's security groups: create, list, show
// and delete, refusing to delete a group a port still uses
// (SecurityGroupInUse, 409) as Neutron does.
func (c *Cloud) securityGroupRoutes(mux *http.ServeMux) {
	const base = "/networking/v2.0/security-groups"
	project := func(g *SecurityGroup) string { return g.ProjectID }
	notFound := func(w http.ResponseWriter, id string) {
		neutronFault(w, http.StatusNotFound, "SecurityGroupNotFound", fmt.Sprintf("Security group %s does not exist", id))
	}
	mux.HandleFunc("GET "+base, func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		listed(w, r, "security_groups", c.securityGroups, func(g *SecurityGroup) map[string]string {
			return map[string]string{"project_id": g.ProjectID, "name": g.Name, "description": g.Description}
		}, securityGroupView)
	})
	mux.HandleFunc("GET "+base+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if g, ok := owned(w, r, c.securityGroups, project, notFound); ok {
			writeJSON(w, http.StatusOK, map[string]any{"security_group": securityGroupView(g)})
		}
	})
	mux.HandleFunc("POST "+base, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			G struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"security_group"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			neutronFault(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for operation: failed to parse the request body.")
			return
		}
		if body.G.Name == "default" {
			neutronFault(w, http.StatusConflict, "SecurityGroupDefaultAlreadyExists", "Default security group already exists.")
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		g := &SecurityGroup{ID: uuid.NewString(), Name: body.G.Name, Description: body.G.Description, ProjectID: r.Header.Get("X-Project-Id")}
		c.securityGroups[g.ID] = g
		writeJSON(w, http.StatusCreated, map[string]any{"security_group": securityGroupView(g)})
	})
	mux.HandleFunc("DELETE "+base+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		g, ok := owned(w, r, c.securityGroups, project, notFound)
		if !ok {
			return
		}
		for _, p := range c.ports {
			if slices.Contains(p.SecurityGroups, g.ID) {
				neutronFault(w, http.StatusConflict, "SecurityGroupInUse", fmt.Sprintf("Security Group %s in use.", g.ID))
				return
			}
		}
		delete(c.securityGroups, g.ID)
		w.WriteHeader(http.StatusNoContent)
	})
}

// SecurityGroups returns the security groups the stand-in holds, of every
// project.
func (c *Cloud) SecurityGroups() []SecurityGroup { return snapshot(c, c.securityGroups) }

// UseSecurityGroup puts a security group on a port (or, with remove, takes
// it off), as the cloud controller manager does to the member nodes' ports.
func (c *Cloud) UseSecurityGroup(portID, groupID string, remove bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.ports[portID]
	if !ok {
		return
	}
	p.SecurityGroups = slices.DeleteFunc(p.SecurityGroups, func(s string) bool { return s == groupID })
	if !remove {
		p.SecurityGroups = append(p.SecurityGroups, groupID)
	}
}
