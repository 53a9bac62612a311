package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// CredentialIssuer makes and removes Keystone application credentials with
// the caller's token (auth.Keystone).
type CredentialIssuer interface {
	CreateApplicationCredential(ctx context.Context, userToken, userID, name, description string) (*auth.ApplicationCredential, error)
	DeleteApplicationCredential(ctx context.Context, userToken, userID, id string) error
}

// issueCredential creates the cluster's application credential with the
// caller's token, as Magnum's drivers create a trust: the cluster's
// infrastructure acts in the cloud with the caller's roles on the
// cluster's project. nil when Magnetite issues no credentials (noauth).
func (s *Server) issueCredential(r *http.Request, c *model.Cluster) (*model.ClusterCredential, error) {
	if s.opts.Credentials == nil {
		return nil, nil
	}
	id := identity(r)
	if id.ProjectID != c.ProjectID {
		return nil, forbidden("The cluster's application credential is made with your token, which is scoped to project %s; the cluster belongs to project %s. Use a token scoped to project %s.", id.ProjectID, c.ProjectID, c.ProjectID)
	}
	name := "magnetite-" + c.UUID + "-" + uuid.NewString()[:8]
	desc := "Kubernetes cluster " + c.Name + " (" + c.UUID + ") on Magnetite: its Cluster API provider, cloud controller manager and CSI drivers use this credential. It is deleted with the cluster."
	ac, err := s.opts.Credentials.CreateApplicationCredential(r.Context(), id.AuthToken, id.UserID, name, desc)
	switch {
	case errors.Is(err, auth.ErrRefused):
		return nil, forbidden("Keystone refused to create the cluster's application credential: %s. Clusters need a credential of their own; authenticate with a password or token (an application credential cannot create another unless it is unrestricted).", keystoneReason(err))
	case err != nil:
		return nil, err
	}
	return &model.ClusterCredential{ID: ac.ID, ClusterID: c.UUID, UserID: id.UserID, ProjectID: c.ProjectID,
		Secret: ac.Secret, CreatedAt: time.Now().UTC()}, nil
}

// withdrawCredential deletes a credential made for a request that then
// failed, so nothing is left behind in Keystone.
func (s *Server) withdrawCredential(r *http.Request, cred *model.ClusterCredential) {
	if cred == nil {
		return
	}
	// The request may have been cancelled: the clean-up still runs.
	ctx := context.WithoutCancel(r.Context())
	if err := s.opts.Credentials.DeleteApplicationCredential(ctx, identity(r).AuthToken, cred.UserID, cred.ID); err != nil {
		s.log.ErrorContext(ctx, "application credential of a failed request left in Keystone", "credential", cred.ID, "user", cred.UserID, "error", err.Error())
	}
}

// keystoneReason is Keystone's own words for a refusal.
func keystoneReason(err error) string {
	var re *auth.RefusedError
	if errors.As(err, &re) {
		return re.Message
	}
	return err.Error()
}

// rotateCredential is PATCH /v1/credentials/{cluster} (1.12): the cluster
// gets a new application credential made with the caller's token, the
// conductor writes it to the cluster's Secrets and then deletes the old one
// from Keystone.
func (s *Server) rotateCredential(w http.ResponseWriter, r *http.Request) error {
	c, err := s.clusterSince(r, sinceCredentialRotation, "credential:rotate")
	if err != nil {
		return err
	}
	if err := refuseWhileDeleting(c); err != nil {
		return err
	}
	if s.opts.Credentials == nil {
		return badRequest("Magnetite issues no application credentials here: it runs without Keystone ([auth] strategy = noauth), so cluster %s has none to rotate.", c.Name)
	}
	cred, err := s.issueCredential(r, c)
	if err != nil {
		return err
	}
	t := time.Now().UTC()
	c.UpdatedAt = &t
	op := s.newOperation(r, model.OpCredentialRotate, c, "", &model.CredentialRotatePayload{Credential: cred.ID})
	if err := s.applyClusterChange(r, c.Status, store.ClusterChange{Cluster: c, Operation: op, Credential: cred}, nil); err != nil {
		s.withdrawCredential(r, cred)
		return err
	}
	writeJSON(w, http.StatusAccepted, apitypes.ClusterID{UUID: c.UUID})
	return nil
}
