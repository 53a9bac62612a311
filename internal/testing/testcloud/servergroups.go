package testcloud

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// serverGroupPolicies are the policies Nova knows; the soft ones came with
// microversion 2.15.
var serverGroupPolicies = []string{"affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"}

// novaMicroversion reads the compute microversion a request asks for
// (2.1 when it names none), as "2.64" -> 64.
func novaMicroversion(r *http.Request) int {
	v := r.Header.Get("X-OpenStack-Nova-API-Version")
	if v == "" {
		v = strings.TrimPrefix(r.Header.Get("OpenStack-API-Version"), "compute ")
	}
	if _, minor, ok := strings.Cut(v, "."); ok {
		if n, err := strconv.Atoi(minor); err == nil {
			return n
		}
	}
	return 1
}

func novaBadRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"badRequest": map[string]any{"code": 400, "message": msg}})
}

// serverGroupRoutes serve Nova's os-server-groups as Nova does for a
// project member: a project's groups only, the policy as one string from
// microversion 2.64 (a list of one before), soft policies from 2.15, and
// Nova's refusals and messages.
func (c *Cloud) serverGroupRoutes(mux *http.ServeMux) {
	view := func(g *ServerGroup, mv int) map[string]any {
		out := map[string]any{"id": g.ID, "name": g.Name, "members": []string{}, "project_id": g.ProjectID, "user_id": g.UserID}
		if mv >= 64 {
			out["policy"], out["rules"] = g.Policy, map[string]any{}
		} else {
			out["policies"], out["metadata"] = []string{g.Policy}, map[string]any{}
		}
		return out
	}
	groups := kind[ServerGroup]{items: c.serverGroups, locked: c.locked,
		fields:   projectOf(func(g *ServerGroup) string { return g.ProjectID }),
		notFound: novaNotFound("Instance group %s could not be found.")}
	mux.HandleFunc("GET /compute/v2.1/os-server-groups", groups.locked(func(w http.ResponseWriter, r *http.Request) {
		list := []map[string]any{}
		for _, id := range slices.Sorted(maps.Keys(c.serverGroups)) {
			if g := c.serverGroups[id]; g.ProjectID == r.Header.Get("X-Project-Id") {
				list = append(list, view(g, novaMicroversion(r)))
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"server_groups": list})
	}))
	mux.HandleFunc("GET /compute/v2.1/os-server-groups/{id}", groups.onOwned(func(w http.ResponseWriter, r *http.Request, g *ServerGroup) {
		writeJSON(w, http.StatusOK, map[string]any{"server_group": view(g, novaMicroversion(r))})
	}))
	mux.HandleFunc("DELETE /compute/v2.1/os-server-groups/{id}", groups.onOwned(func(w http.ResponseWriter, _ *http.Request, g *ServerGroup) {
		delete(c.serverGroups, g.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("POST /compute/v2.1/os-server-groups", func(w http.ResponseWriter, r *http.Request) {
		mv := novaMicroversion(r)
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			ServerGroup map[string]json.RawMessage `json:"server_group"`
		}
		if err := json.Unmarshal(raw, &body); err != nil || body.ServerGroup == nil {
			novaBadRequest(w, "Invalid input for field/attribute server_group. Value: None. None is not of type 'object'")
			return
		}
		var name, policy string
		var policies []string
		_ = json.Unmarshal(body.ServerGroup["name"], &name)
		for k := range body.ServerGroup {
			allowed := []string{"name", "policies"}
			if mv >= 64 {
				allowed = []string{"name", "policy", "rules"}
			}
			if !slices.Contains(allowed, k) {
				novaBadRequest(w, fmt.Sprintf("Invalid input for field/attribute server_group. Value: %s. Additional properties are not allowed ('%s' was unexpected)", raw, k))
				return
			}
		}
		if mv >= 64 {
			if err := json.Unmarshal(body.ServerGroup["policy"], &policy); err != nil || policy == "" {
				novaBadRequest(w, "Invalid input for field/attribute server_group. Value: "+string(raw)+". 'policy' is a required property")
				return
			}
		} else {
			if err := json.Unmarshal(body.ServerGroup["policies"], &policies); err != nil || len(policies) != 1 {
				novaBadRequest(w, "Invalid input for field/attribute policies. Value: "+string(body.ServerGroup["policies"])+". policies must hold exactly one policy")
				return
			}
			policy = policies[0]
		}
		allowed := serverGroupPolicies
		if mv < 15 {
			allowed = serverGroupPolicies[:2]
		}
		if !slices.Contains(allowed, policy) {
			novaBadRequest(w, fmt.Sprintf("Invalid input for field/attribute policy. Value: %s. '%s' is not one of %q", policy, policy, allowed))
			return
		}
		if name == "" || len(name) > 255 {
			novaBadRequest(w, "Invalid input for field/attribute name. Value: "+name+". name must be 1 to 255 characters")
			return
		}
		g := &ServerGroup{ID: uuid.NewString(), Name: name, Policy: policy, ProjectID: r.Header.Get("X-Project-Id"), UserID: r.Header.Get("X-User-Id")}
		c.mu.Lock()
		c.serverGroups[g.ID] = g
		c.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"server_group": view(g, mv)})
	})
}

// ServerGroups returns the server groups the stand-in holds, of every
// project.
func (c *Cloud) ServerGroups() []ServerGroup { return snapshot(&c.mu, c.serverGroups) }

// DeleteServerGroup removes a server group behind Magnetite's back, as an
// operator cleaning up might.
func (c *Cloud) DeleteServerGroup(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.serverGroups, id)
}
