package conductor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/model"
)

// CredentialDeleter deletes a user's application credential in Keystone
// (auth.Keystone, with Magnetite's service token when userToken is empty).
type CredentialDeleter interface {
	DeleteApplicationCredential(ctx context.Context, userToken, userID, id string) error
}

// CloudCredentials is how the conductor turns a cluster's application
// credential into the Secrets its infrastructure reads, and deletes retired
// ones.
type CloudCredentials struct {
	// Keystone deletes retired credentials and those of deleted clusters;
	// nil (noauth) deletes none.
	Keystone CredentialDeleter
	// AuthURL is the identity endpoint as the cluster's machines reach it.
	AuthURL string
	// RegionName and Interface select the cloud's endpoints.
	RegionName string
	Interface  string
	// CACert is the PEM bundle that verifies the cloud's endpoints, if
	// they do not use publicly trusted certificates.
	CACert []byte
}

// cloudCredentialsName is the Secret holding a cluster's clouds.yaml, which
// every cluster with an application credential gets, whether or not its
// infrastructure reads it.
func cloudCredentialsName(objName string) string { return objName + "-cloud-config" }

// credentialSecrets are the Secrets that carry the cluster's active
// application credential. refs are the Secrets the driver asked for; the
// clouds.yaml Secret is desired whenever the cluster has a credential.
func (c *Conductor) credentialSecrets(ctx context.Context, sc *scope, refs []driver.SecretRef) ([]*unstructured.Unstructured, error) {
	creds, err := c.st.ClusterCredentials(ctx, sc.cluster.UUID)
	if err != nil {
		return nil, err
	}
	var active *model.ClusterCredential
	if len(creds) > 0 && !creds[0].Retired {
		active = creds[0]
	}
	objName := clusterObjectName(sc.cluster)
	want := map[string]driver.SecretRef{}
	for _, ref := range refs {
		if ref.Credentials != "" {
			want[ref.Name] = ref
		}
	}
	if active == nil {
		for _, ref := range refs {
			if ref.Credentials != "" {
				return nil, permanentf("the cluster needs the Secret %s (%s) but has no application credential: Magnetite creates one when the cluster is created with a Keystone token ([auth] strategy = keystone); give it one with PATCH /v1/credentials/%s", ref.Name, ref.Purpose, sc.cluster.UUID)
			}
		}
		return nil, nil
	}
	if _, ok := want[cloudCredentialsName(objName)]; !ok {
		want[cloudCredentialsName(objName)] = driver.SecretRef{Name: cloudCredentialsName(objName), Credentials: driver.CredentialsCloudsYAML}
	}
	var out []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(want)) {
		ref := want[name]
		data, err := c.credentialData(ref, active)
		if err != nil {
			return nil, permanentf("%v", err)
		}
		s := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": sc.namespace,
				"annotations": map[string]any{"magnetite.io/application-credential-id": active.ID}},
			"data": data,
		}}
		if ref.Credentials == driver.CredentialsCloudConfigAddon {
			s.Object["type"] = "addons.cluster.x-k8s.io/resource-set"
		}
		out = append(out, s)
	}
	return out, nil
}

// credentialData is a credential Secret's data, base64-encoded.
func (c *Conductor) credentialData(ref driver.SecretRef, cred *model.ClusterCredential) (map[string]any, error) {
	cc := c.opts.Credentials
	if cc.AuthURL == "" {
		return nil, errors.New("the conductor does not know Keystone's address for clusters: set [cluster_credentials] auth_url (or [keystone_authtoken] www_authenticate_uri)")
	}
	raw := map[string][]byte{}
	switch ref.Credentials {
	case driver.CredentialsCloudsYAML:
		y, err := c.cloudsYAML(cred, valueOr(ref.CloudName, "openstack"))
		if err != nil {
			return nil, err
		}
		raw["clouds.yaml"] = y
		if len(cc.CACert) > 0 {
			raw["cacert"] = cc.CACert
		}
	case driver.CredentialsCloudConfigAddon:
		m, err := c.cloudConfigManifests(ref, cred)
		if err != nil {
			return nil, err
		}
		raw["cloud-config.yaml"] = m
	default:
		return nil, fmt.Errorf("unknown credentials format %q for Secret %s", ref.Credentials, ref.Name)
	}
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		out[k] = base64.StdEncoding.EncodeToString(v)
	}
	return out, nil
}

func (c *Conductor) cloudsYAML(cred *model.ClusterCredential, cloudName string) ([]byte, error) {
	cc := c.opts.Credentials
	cloud := map[string]any{
		"auth": map[string]any{
			"auth_url":                      cc.AuthURL,
			"application_credential_id":     cred.ID,
			"application_credential_secret": cred.Secret,
		},
		"auth_type":            "v3applicationcredential",
		"identity_api_version": 3,
		"interface":            valueOr(cc.Interface, "public"),
	}
	if cc.RegionName != "" {
		cloud["region_name"] = cc.RegionName
	}
	return yaml.Marshal(map[string]any{"clouds": map[string]any{cloudName: cloud}})
}

// cloudConfigManifests are the workload cluster's Secrets, as the YAML
// stream a ClusterResourceSet applies.
func (c *Conductor) cloudConfigManifests(ref driver.SecretRef, cred *model.ClusterCredential) ([]byte, error) {
	cc := c.opts.Credentials
	var conf strings.Builder
	conf.WriteString("[Global]\n")
	fmt.Fprintf(&conf, "auth-url=%s\n", cc.AuthURL)
	fmt.Fprintf(&conf, "application-credential-id=%s\n", cred.ID)
	fmt.Fprintf(&conf, "application-credential-secret=%s\n", cred.Secret)
	if cc.RegionName != "" {
		fmt.Fprintf(&conf, "region=%s\n", cc.RegionName)
	}
	// The key cloud-provider-openstack reads (pkg/client AuthOpts
	// EndpointType, gcfg "os-endpoint-type"); it has no "interface".
	fmt.Fprintf(&conf, "os-endpoint-type=%s\n", valueOr(cc.Interface, "public"))
	data := map[string]any{}
	if len(cc.CACert) > 0 {
		// Every addon mounts the Secret at addons.CloudConfigDir.
		conf.WriteString("ca-file=" + addons.CloudConfigDir + "/ca.crt\n")
		data["ca.crt"] = base64.StdEncoding.EncodeToString(cc.CACert)
	}
	if ref.CloudConf != "" {
		conf.WriteString("\n" + ref.CloudConf)
	}
	data["cloud.conf"] = base64.StdEncoding.EncodeToString([]byte(conf.String()))
	docs := []map[string]any{workloadSecret("cloud-config", data)}
	if ref.Manila {
		m := map[string]string{
			"os-authURL":                     cc.AuthURL,
			"os-applicationCredentialID":     cred.ID,
			"os-applicationCredentialSecret": cred.Secret,
			"os-region":                      cc.RegionName,
			"os-endpointType":                valueOr(cc.Interface, "public"), // pkg/client AuthOpts's name
		}
		md := map[string]any{}
		for k, v := range m {
			if v != "" {
				md[k] = base64.StdEncoding.EncodeToString([]byte(v))
			}
		}
		if len(cc.CACert) > 0 {
			md["os-certAuthority"] = base64.StdEncoding.EncodeToString(cc.CACert)
		}
		docs = append(docs, workloadSecret("manila-csi-credentials", md))
	}
	var out []byte
	for i, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, []byte("---\n")...)
		}
		out = append(out, y...)
	}
	return out, nil
}

func workloadSecret(name string, data map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": name, "namespace": "kube-system"},
		"data":     data,
	}
}

func valueOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// deleteCredentials deletes application credentials from Keystone and
// forgets them: the retired ones once the cluster's Secrets carry the
// active one, or all of them when the cluster is gone. A credential
// Keystone refuses to delete (the service user lacks the admin role) is
// reported in the cluster's events and the log, with its id, and forgotten:
// its secret must not outlive the cluster in Magnetite's database.
func (c *Conductor) deleteCredentials(ctx context.Context, cl *model.Cluster, all bool) error {
	creds, err := c.st.ClusterCredentials(ctx, cl.UUID)
	if err != nil {
		return err
	}
	for _, cred := range creds {
		if !cred.Retired && !all {
			continue
		}
		if k := c.opts.Credentials.Keystone; k != nil {
			err := k.DeleteApplicationCredential(ctx, "", cred.UserID, cred.ID)
			switch {
			case errors.Is(err, auth.ErrRefused) || errors.Is(err, auth.ErrUnauthenticated):
				msg := fmt.Sprintf("Keystone refused to delete application credential %s of user %s (%v); delete it with `openstack application credential delete %s` as that user, or give Magnetite's service user the admin role", cred.ID, cred.UserID, err, cred.ID)
				c.log.Error("application credential left in Keystone", "cluster", cl.UUID, "credential", cred.ID, "user", cred.UserID, "error", err)
				c.event(ctx, cl.UUID, model.EventOperation, "", "credential", msg)
			case err != nil:
				return err // Keystone unreachable: the operation is retried
			default:
				c.event(ctx, cl.UUID, model.EventOperation, "", "credential", fmt.Sprintf("deleted application credential %s from Keystone", cred.ID))
			}
		} else {
			c.log.Warn("no Keystone to delete the application credential from ([auth] strategy is not keystone)", "cluster", cl.UUID, "credential", cred.ID)
		}
		if err := c.st.ForgetClusterCredential(ctx, cred.ID); err != nil {
			return err
		}
	}
	return nil
}
