package conductor

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// FactsSource reads what the cloud says about the resources a cluster uses.
// The conductor asks once per operation and hands the result to the driver.
type FactsSource interface {
	Facts(ctx context.Context, ct *model.ClusterTemplate, c *model.Cluster, ngs []*model.NodeGroup) (*facts.Facts, error)
}

// NoCloud is the facts source of infrastructures that need no cloud (the
// in-memory one): there is nothing to read.
type NoCloud struct{}

// Facts returns empty facts.
func (NoCloud) Facts(context.Context, *model.ClusterTemplate, *model.Cluster, []*model.NodeGroup) (*facts.Facts, error) {
	return &facts.Facts{}, nil
}

// CredentialLogin logs in with an application credential (auth.Keystone).
type CredentialLogin interface {
	ApplicationCredentialToken(ctx context.Context, id, secret string) (token string, renewAt time.Time, err error)
}

// FactsReader reads flavors, images and networks with a token, and makes
// and deletes server groups (cloud.Resources).
type FactsReader interface {
	Facts(ctx context.Context, token string, refs cloud.FactRefs) (*facts.Facts, error)
	EnsureServerGroups(ctx context.Context, token string, groups []driver.ServerGroup) (map[string]string, error)
	DeleteServerGroups(ctx context.Context, token string, ids []string) error
	CleanWorkloadLeftovers(ctx context.Context, token, cluster string, policy cloud.LeftoverPolicy) (cloud.Cleanup, error)
	ReleaseAPILoadBalancer(ctx context.Context, token, name string) (cloud.Cleanup, error)
	ServerFault(ctx context.Context, token, id string) (string, error)
	MissingServerRefs(ctx context.Context, token string, refs cloud.ServerRefs) ([]string, error)
}

// ServerGroups makes and deletes a cluster's Nova server groups as the
// cluster itself (CloudFacts); a facts source without it (no cloud) makes
// none.
type ServerGroups interface {
	EnsureServerGroups(ctx context.Context, c *model.Cluster, groups []driver.ServerGroup) (map[string]string, error)
	DeleteServerGroups(ctx context.Context, c *model.Cluster, ids []string) error
}

// WorkloadLeftovers finds and deletes, as the cluster, what its workload's
// cloud controller manager and CSI drivers made in the cloud (CloudFacts);
// a facts source without it (no cloud) has nothing to clean.
type WorkloadLeftovers interface {
	CleanWorkloadLeftovers(ctx context.Context, c *model.Cluster, name string, policy cloud.LeftoverPolicy) (cloud.Cleanup, error)
}

// APILoadBalancerRelease deletes, as the cluster itself, the API load
// balancer released CAPO cannot delete on a cloud without Neutron's L3
// extension (CloudFacts); a facts source without it (no cloud) leaves it
// to CAPO.
type APILoadBalancerRelease interface {
	ReleaseAPILoadBalancer(ctx context.Context, c *model.Cluster, name string) (cloud.Cleanup, error)
}

// ServerFaults reads, as the cluster itself, why Nova put one of its
// servers in ERROR (CloudFacts); a facts source without it (no cloud) knows
// only what the infrastructure provider recorded.
type ServerFaults interface {
	ServerFault(ctx context.Context, c *model.Cluster, serverID string) (string, error)
	// MissingServerRefs lists what a server asks for that the cluster's
	// project cannot use now (cloud.Resources.MissingServerRefs).
	MissingServerRefs(ctx context.Context, c *model.Cluster, refs cloud.ServerRefs) ([]string, error)
}

// CloudFacts reads an OpenStack cluster's facts from Nova, Glance and
// Neutron as the cluster itself: with its application credential, so the
// conductor sees exactly the flavors, images and networks the cluster's
// project sees, and needs no cloud-wide credentials of its own.
type CloudFacts struct {
	Store  *store.DB
	Login  CredentialLogin
	Reader FactsReader

	mu     sync.Mutex
	tokens map[string]cachedToken // by application credential id
}

type cachedToken struct {
	token   string
	renewAt time.Time
}

// asCluster logs in as the cluster: with its active application
// credential, whose id it also returns.
func (f *CloudFacts) asCluster(ctx context.Context, c *model.Cluster) (token, credentialID string, err error) {
	creds, err := f.Store.ClusterCredentials(ctx, c.UUID)
	if err != nil {
		return "", "", err
	}
	if len(creds) == 0 || creds[0].Retired {
		return "", "", permanentf("cluster %s has no application credential to act in the cloud with: Magnetite makes one when a cluster is created with a Keystone token; give it one with PATCH /v1/credentials/%s", c.Name, c.UUID)
	}
	tok, err := f.token(ctx, creds[0])
	if errors.Is(err, auth.ErrRefused) {
		return "", "", permanentf("Keystone no longer accepts cluster %s's application credential (%v): rotate it with PATCH /v1/credentials/%s", c.Name, err, c.UUID)
	}
	return tok, creds[0].ID, err
}

// EnsureServerGroups implements ServerGroups.
func (f *CloudFacts) EnsureServerGroups(ctx context.Context, c *model.Cluster, groups []driver.ServerGroup) (map[string]string, error) {
	tok, cred, err := f.asCluster(ctx, c)
	if err != nil {
		return nil, err
	}
	ids, err := f.Reader.EnsureServerGroups(ctx, tok, groups)
	if err != nil && !errors.Is(err, cloud.ErrInvalid) {
		f.forget(cred)
	}
	return ids, err
}

// DeleteServerGroups implements ServerGroups.
func (f *CloudFacts) DeleteServerGroups(ctx context.Context, c *model.Cluster, ids []string) error {
	tok, cred, err := f.asCluster(ctx, c)
	if err != nil {
		return err
	}
	if err := f.Reader.DeleteServerGroups(ctx, tok, ids); err != nil {
		f.forget(cred)
		return err
	}
	return nil
}

// ReleaseAPILoadBalancer implements APILoadBalancerRelease.
func (f *CloudFacts) ReleaseAPILoadBalancer(ctx context.Context, c *model.Cluster, name string) (cloud.Cleanup, error) {
	tok, cred, err := f.asCluster(ctx, c)
	if err != nil {
		return cloud.Cleanup{}, err
	}
	res, err := f.Reader.ReleaseAPILoadBalancer(ctx, tok, name)
	if err != nil {
		f.forget(cred)
	}
	return res, err
}

// CleanWorkloadLeftovers implements WorkloadLeftovers.
func (f *CloudFacts) CleanWorkloadLeftovers(ctx context.Context, c *model.Cluster, name string, policy cloud.LeftoverPolicy) (cloud.Cleanup, error) {
	tok, cred, err := f.asCluster(ctx, c)
	if err != nil {
		return cloud.Cleanup{}, err
	}
	res, err := f.Reader.CleanWorkloadLeftovers(ctx, tok, name, policy)
	if err != nil {
		f.forget(cred)
	}
	return res, err
}

// ServerFault implements ServerFaults.
func (f *CloudFacts) ServerFault(ctx context.Context, c *model.Cluster, serverID string) (string, error) {
	tok, cred, err := f.asCluster(ctx, c)
	if err != nil {
		return "", err
	}
	msg, err := f.Reader.ServerFault(ctx, tok, serverID)
	if err != nil {
		f.forget(cred)
	}
	return msg, err
}

// MissingServerRefs implements ServerFaults.
func (f *CloudFacts) MissingServerRefs(ctx context.Context, c *model.Cluster, refs cloud.ServerRefs) ([]string, error) {
	tok, cred, err := f.asCluster(ctx, c)
	if err != nil {
		return nil, err
	}
	missing, err := f.Reader.MissingServerRefs(ctx, tok, refs)
	if err != nil {
		f.forget(cred)
	}
	return missing, err
}

// Facts implements FactsSource.
func (f *CloudFacts) Facts(ctx context.Context, ct *model.ClusterTemplate, c *model.Cluster, ngs []*model.NodeGroup) (*facts.Facts, error) {
	tok, cred, err := f.asCluster(ctx, c)
	if err != nil {
		return nil, err
	}
	img := ct.ImageID
	imagesRef := []*string{&img}
	var flavorsRef []*string
	for _, ng := range ngs {
		// The flavor each node group gets, as the renderer resolves it.
		flavor := driver.FlavorOf(ct, c, ng)
		imagesRef = append(imagesRef, ng.ImageID)
		flavorsRef = append(flavorsRef, &flavor)
	}
	fixed := ct.FixedNetwork
	if c.FixedNetwork != nil {
		fixed = c.FixedNetwork
	}
	refs := cloud.FactRefsOf(imagesRef, flavorsRef, []*string{ct.ExternalNetworkID, fixed})
	facts, err := f.Reader.Facts(ctx, tok, refs)
	if err != nil {
		// A token Keystone revoked meanwhile is logged in again next time.
		f.forget(cred)
		return nil, err
	}
	return facts, nil
}

func (f *CloudFacts) token(ctx context.Context, cred *model.ClusterCredential) (string, error) {
	f.mu.Lock()
	t, ok := f.tokens[cred.ID]
	f.mu.Unlock()
	if ok && time.Now().Before(t.renewAt) {
		return t.token, nil
	}
	tok, renewAt, err := f.Login.ApplicationCredentialToken(ctx, cred.ID, cred.Secret)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	if f.tokens == nil {
		f.tokens = map[string]cachedToken{}
	}
	f.tokens[cred.ID] = cachedToken{token: tok, renewAt: renewAt}
	f.mu.Unlock()
	return tok, nil
}

func (f *CloudFacts) forget(credentialID string) {
	f.mu.Lock()
	delete(f.tokens, credentialID)
	f.mu.Unlock()
}
