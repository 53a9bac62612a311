package auth

import (
	"context"
	"net/http"
	"slices"
	"strings"
)

// Identity is who is calling: the project the request is scoped to, the user
// and the roles Keystone (or noauth headers) granted.
type Identity struct {
	ProjectID string
	UserID    string
	Roles     []string
	// AuthToken is the caller's token, kept for calls made on the caller's
	// behalf (application credentials). Never logged or returned.
	AuthToken string
}

// HasRole reports whether the caller holds the role (case-insensitive).
func (id Identity) HasRole(role string) bool {
	return slices.ContainsFunc(id.Roles, func(r string) bool { return strings.EqualFold(r, role) })
}

// IsAdmin follows Magnum's default: the admin role makes a caller admin.
func (id Identity) IsAdmin() bool { return id.HasRole("admin") }

type ctxKey struct{}

// WithIdentity stores the caller in ctx.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the caller stored by the authentication middleware.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// NoAuth identifies callers from headers, as Magnum's noauth mode does: the
// project from X-Project-Id, the user from X-User-Id, the roles from X-Roles,
// falling back to configured defaults. Any X-Auth-Token is accepted so
// clients configured with an admin token work unchanged.
type NoAuth struct {
	DefaultProject string
	DefaultUser    string
	DefaultRoles   []string
}

// Identify implements the authenticator used by the API middleware.
func (n NoAuth) Identify(r *http.Request) (Identity, error) {
	id := Identity{
		ProjectID: firstHeader(r, "X-Project-Id", "X-Tenant-Id"),
		UserID:    firstHeader(r, "X-User-Id"),
		AuthToken: r.Header.Get("X-Auth-Token"),
	}
	if id.ProjectID == "" {
		id.ProjectID = n.DefaultProject
	}
	if id.UserID == "" {
		id.UserID = n.DefaultUser
	}
	if roles := r.Header.Get("X-Roles"); roles != "" {
		for _, role := range strings.Split(roles, ",") {
			if role = strings.TrimSpace(role); role != "" {
				id.Roles = append(id.Roles, role)
			}
		}
	} else {
		id.Roles = append(id.Roles, n.DefaultRoles...)
	}
	return id, nil
}

func firstHeader(r *http.Request, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(r.Header.Get(n)); v != "" {
			return v
		}
	}
	return ""
}
