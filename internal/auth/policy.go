package auth

import (
	"errors"
	"fmt"
	"strings"
)

// ErrForbidden is returned when policy refuses an action.
var ErrForbidden = errors.New("auth: forbidden")

// Target describes the object an action is about.
type Target struct {
	ProjectID string
	// Public is set for templates visible to every project.
	Public bool
}

// Policy decides what a caller may do, with Magnum's default semantics:
// admins may do anything; project members own their project's objects;
// readers may only read; publishing templates and managing quotas need admin.
type Policy struct{}

var readOnlyActions = map[string]bool{
	"clustertemplate:get": true, "clustertemplate:get_all": true, "clustertemplate:detail": true,
	"cluster:get": true, "cluster:get_all": true, "cluster:detail": true,
	"nodegroup:get": true, "nodegroup:get_all": true,
	"quota:get": true, "quota:get_all": true, "stats:get_all": true,
	"magnum-service:get_all": true, "certificate:get": true,
}

var adminOnlyActions = map[string]bool{
	"clustertemplate:publish": true, "quota:create": true, "quota:update": true, "quota:delete": true,
	"magnum-service:get_all": true,
}

// Authorize returns nil when id may perform action on target.
func (Policy) Authorize(id Identity, action string, target *Target) error {
	if id.IsAdmin() {
		return nil
	}
	if adminOnlyActions[action] {
		return fmt.Errorf("%w: %s is restricted to administrators", ErrForbidden, action)
	}
	if !readOnlyActions[action] && isReaderOnly(id) {
		return fmt.Errorf("%w: the reader role may not perform %s", ErrForbidden, action)
	}
	if target != nil && target.ProjectID != id.ProjectID && !(target.Public && readOnlyActions[action]) {
		return fmt.Errorf("%w: %s on another project's object", ErrForbidden, action)
	}
	return nil
}

func isReaderOnly(id Identity) bool {
	if len(id.Roles) == 0 {
		return false
	}
	for _, r := range id.Roles {
		if !strings.EqualFold(r, "reader") {
			return false
		}
	}
	return true
}
