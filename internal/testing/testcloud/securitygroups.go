package testcloud

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/google/uuid"
)

// SecurityGroup is a Neutron security group as the stand-in holds it.
type SecurityGroup struct {
	ID, Name, Description, ProjectID string
	Rules                            []SecurityGroupRule
}

// SecurityGroupRule is a rule of a security group.
type SecurityGroupRule struct {
	ID              string `json:"id"`
	SecurityGroupID string `json:"security_group_id"`
	Description     string `json:"description"`
	Direction       string `json:"direction"`
	EtherType       string `json:"ethertype"`
	Protocol        string `json:"protocol,omitempty"`
	PortRangeMin    int    `json:"port_range_min,omitempty"`
	PortRangeMax    int    `json:"port_range_max,omitempty"`
	RemoteGroupID   string `json:"remote_group_id,omitempty"`
	RemoteIPPrefix  string `json:"remote_ip_prefix,omitempty"`
}

func securityGroupView(g *SecurityGroup) map[string]any {
	return map[string]any{"id": g.ID, "name": g.Name, "description": g.Description, "project_id": g.ProjectID,
		"tenant_id": g.ProjectID, "security_group_rules": nonNil(g.Rules), "stateful": true, "tags": []string{}}
}

// securityGroupRoutes serve Neutron's security groups: create, list, show
// and delete, refusing to delete a group a port still uses
// (SecurityGroupInUse, 409) and one more group than the project's quota
// (OverQuota, 409) as Neutron does.
func (c *Cloud) securityGroupRoutes(mux *http.ServeMux) {
	const base = "/networking/v2.0/security-groups"
	groups := kind[SecurityGroup]{key: "security_group", items: c.securityGroups, view: securityGroupView, locked: c.locked,
		fields: func(g *SecurityGroup) map[string]string {
			return map[string]string{"project_id": g.ProjectID, "name": g.Name, "description": g.Description}
		},
		notFound: securityGroupNotFound}
	groups.serveReads(mux, base)
	mux.HandleFunc("POST "+base, func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			G struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"security_group"`
		}
		if !decoded(w, r, &body, neutronMalformed) {
			return
		}
		if body.G.Name == "default" {
			neutronFault(w, http.StatusConflict, "SecurityGroupDefaultAlreadyExists", "Default security group already exists.")
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		// The project's default group, which Neutron makes on its first
		// request, counts too.
		used := 1
		for _, g := range c.securityGroups {
			if g.ProjectID == r.Header.Get("X-Project-Id") {
				used++
			}
		}
		if c.overQuota(w, "security_group", used) {
			return
		}
		g := &SecurityGroup{ID: uuid.NewString(), Name: body.G.Name, Description: body.G.Description, ProjectID: r.Header.Get("X-Project-Id")}
		c.securityGroups[g.ID] = g
		writeJSON(w, http.StatusCreated, map[string]any{"security_group": securityGroupView(g)})
	})
	mux.HandleFunc("DELETE "+base+"/{id}", groups.onOwned(func(w http.ResponseWriter, _ *http.Request, g *SecurityGroup) {
		for _, p := range c.ports {
			if slices.Contains(p.SecurityGroups, g.ID) {
				neutronFault(w, http.StatusConflict, "SecurityGroupInUse", fmt.Sprintf("Security Group %s in use.", g.ID))
				return
			}
		}
		delete(c.securityGroups, g.ID)
		// The rules of other groups that name it as their remote group
		// go with it.
		for _, other := range c.securityGroups {
			other.Rules = slices.DeleteFunc(other.Rules, func(r SecurityGroupRule) bool { return r.RemoteGroupID == g.ID })
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("POST /networking/v2.0/security-group-rules", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			R SecurityGroupRule `json:"security_group_rule"`
		}
		if !decoded(w, r, &body, neutronMalformed) {
			return
		}
		rule := body.R
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, id := range []string{rule.SecurityGroupID, rule.RemoteGroupID} {
			if g, ok := c.securityGroups[id]; id != "" && (!ok || g.ProjectID != r.Header.Get("X-Project-Id")) {
				securityGroupNotFound(w, id)
				return
			}
		}
		if rule.SecurityGroupID == "" {
			neutronFault(w, http.StatusBadRequest, "HTTPBadRequest", "Failed to parse request. Required attribute 'security_group_id' not specified")
			return
		}
		if rule.Direction != "ingress" && rule.Direction != "egress" {
			neutronFault(w, http.StatusBadRequest, "HTTPBadRequest", fmt.Sprintf(
				"Invalid input for direction. Reason: %s is not in valid_values.", rule.Direction))
			return
		}
		if rule.RemoteGroupID != "" && rule.RemoteIPPrefix != "" {
			neutronFault(w, http.StatusBadRequest, "SecurityGroupRemoteGroupAndRemoteIpPrefix",
				"Only remote_ip_prefix or remote_group_id may be provided.")
			return
		}
		g := c.securityGroups[rule.SecurityGroupID]
		rule.ID = uuid.NewString()
		g.Rules = append(g.Rules, rule)
		writeJSON(w, http.StatusCreated, map[string]any{"security_group_rule": rule})
	})
}

// SecurityGroups returns the security groups the stand-in holds, of every
// project.
func (c *Cloud) SecurityGroups() []SecurityGroup { return snapshot(&c.mu, c.securityGroups) }

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
