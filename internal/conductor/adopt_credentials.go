package conductor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/model"
)

// An adopted cluster's application credential is rotated where its driver
// keeps it. magnum-capi-helm (1.4.0, driver.py rotate_credential and
// common/app_creds.py) keeps it in the clouds.yaml of its
// "<release>-cloud-credentials" Secret, which CAPO and the chart's addons
// read. magnum-cluster-api (v0.38.1) keeps it in the clouds.yaml of the
// Secret its Cluster's clusterIdentityRefName variable names
// (resources.py CloudConfigSecret, which CAPO reads), and the cloud.conf
// of the workload's kube-system/cloud-config Secret inside the
// "<stack_id>-cloud-provider" Secret, which its ClusterResourceSet applies
// to the workload with the Reconcile strategy, so the workload's cloud
// controller manager and CSI drivers get it too (resources.py
// CloudProviderClusterResourcesSecret; src/magnum.rs). Only the credential
// changes, each Secret by a JSON patch that tests the value it replaces.
// The credential Magnum made (named after the cluster, of the cluster's
// user) is then deleted from Keystone, as the driver deletes it with the
// cluster; and so are the ones Magnetite issued before.

// cloudConfCredential matches the application credential lines of the
// cloud.conf magnum-cluster-api writes
// (utils.py generate_cloud_controller_manager_config).
var cloudConfCredential = regexp.MustCompile(`(?m)^(application-credential-(?:id|secret)\s*=\s*).*$`)

// rotateAdoptedCredential writes the cluster's active credential into an
// adopted cluster's Secrets.
func (c *Conductor) rotateAdoptedCredential(ctx context.Context, sc *scope, a *model.ForeignCluster, cl *unstructured.Unstructured) error {
	creds, err := c.st.ClusterCredentials(ctx, sc.cluster.UUID)
	if err != nil {
		return err
	}
	if len(creds) == 0 || creds[0].Retired {
		return permanentf("cluster %s has no application credential to rotate to: give it one with PATCH /v1/credentials/%s", sc.cluster.Name, sc.cluster.UUID)
	}
	active := creds[0]
	identity := topologyVariable(cl, "clusterIdentityRefName")
	if a.Driver == driverMCH {
		identity = a.HelmRelease + "-cloud-credentials"
	}
	if identity == "" {
		return permanentf("Cluster %s/%s names no cloud credentials (its clusterIdentityRefName variable)", a.Namespace, a.Name)
	}
	secret, err := c.mc.Get(ctx, "Secret", a.Namespace, identity)
	if err != nil {
		return fmt.Errorf("read the cloud credentials Secret %s/%s: %w", a.Namespace, identity, err)
	}
	clouds := secretValue(secret, "clouds.yaml")
	old, rewritten, err := withApplicationCredential(clouds, active)
	if err != nil {
		return permanentf("Secret %s/%s: %v", a.Namespace, identity, err)
	}
	if err := c.patchSecretValue(ctx, a.Namespace, identity, "clouds.yaml", clouds, rewritten); err != nil {
		return err
	}
	what := fmt.Sprintf("%s/%s", a.Namespace, identity)
	if a.Driver == driverMCA {
		provider, err := c.writeMCACloudProvider(ctx, a, active)
		if err != nil {
			return err
		}
		what += fmt.Sprintf(" and %s/%s", a.Namespace, provider)
	}
	c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(model.OpCredentialRotate),
		fmt.Sprintf("wrote application credential %s into %s's Secrets %s", active.ID, a.Driver, what))
	if old != "" && old != active.ID {
		c.deleteForeignCredential(ctx, sc.cluster, old)
	}
	return c.deleteCredentials(ctx, sc.cluster, false)
}

// writeMCACloudProvider writes cred into the cloud.conf that
// magnum-cluster-api's "<stack_id>-cloud-provider" Secret carries to the
// workload (through its ClusterResourceSet), unless it holds it already;
// it returns the Secret's name. A cluster without that Secret has nothing
// to write.
func (c *Conductor) writeMCACloudProvider(ctx context.Context, a *model.ForeignCluster, cred *model.ClusterCredential) (string, error) {
	provider := a.Name + "-cloud-provider"
	ps, err := c.mc.Get(ctx, "Secret", a.Namespace, provider)
	if apierrors.IsNotFound(err) {
		return provider, nil
	}
	if err != nil {
		return provider, err
	}
	doc := secretValue(ps, "cloud-config-secret.yaml")
	if len(doc) == 0 {
		return provider, nil
	}
	next, err := withCloudConfCredential(doc, cred)
	if err != nil {
		return provider, permanentf("Secret %s/%s: %v", a.Namespace, provider, err)
	}
	if holdsCloudConfCredential(doc, cred) {
		return provider, nil
	}
	return provider, c.patchSecretValue(ctx, a.Namespace, provider, "cloud-config-secret.yaml", doc, next)
}

// deleteForeignCredential deletes the credential another driver made for
// the cluster, of the cluster's user; when Keystone refuses, the event
// says how to delete it.
func (c *Conductor) deleteForeignCredential(ctx context.Context, cl *model.Cluster, id string) {
	k := c.opts.Credentials.Keystone
	if k == nil {
		return
	}
	err := k.DeleteApplicationCredential(ctx, "", cl.UserID, id)
	switch {
	case err != nil:
		c.event(ctx, cl.UUID, model.EventOperation, "", "credential",
			fmt.Sprintf("Keystone did not delete application credential %s of user %s, which Magnum made for the cluster (%v); the cluster no longer uses it: delete it with `openstack application credential delete %s` as that user", id, cl.UserID, err, id))
	default:
		c.event(ctx, cl.UUID, model.EventOperation, "", "credential", fmt.Sprintf("deleted application credential %s, which Magnum made for the cluster, from Keystone", id))
	}
}

// patchSecretValue replaces one value of a Secret, testing that it still
// holds what was read.
func (c *Conductor) patchSecretValue(ctx context.Context, namespace, name, key string, was, now []byte) error {
	path := "/data/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": base64.StdEncoding.EncodeToString(was)},
		{"op": "replace", "path": path, "value": base64.StdEncoding.EncodeToString(now)},
	})
	if err := c.mc.JSONPatch(ctx, "Secret", namespace, name, patch); err != nil {
		return classifyApplyError(err)
	}
	return nil
}

// withApplicationCredential is a clouds.yaml with cred in place of the
// application credential of its "default" (or only) cloud, everything
// else kept; old is the credential it replaced.
func withApplicationCredential(clouds []byte, cred *model.ClusterCredential) (old string, out []byte, err error) {
	var doc map[string]any
	if err := yaml.Unmarshal(clouds, &doc); err != nil || doc == nil {
		return "", nil, errors.New("its clouds.yaml is not YAML")
	}
	all, _ := doc["clouds"].(map[string]any)
	cloud, _ := all["default"].(map[string]any)
	if cloud == nil && len(all) == 1 {
		for _, only := range all {
			cloud, _ = only.(map[string]any)
		}
	}
	authSection, _ := cloud["auth"].(map[string]any)
	if authSection == nil || authSection["application_credential_id"] == nil {
		return "", nil, errors.New("its clouds.yaml has no application credential to replace")
	}
	old, _ = authSection["application_credential_id"].(string)
	authSection["application_credential_id"] = cred.ID
	authSection["application_credential_secret"] = cred.Secret
	out, err = yaml.Marshal(doc)
	return old, out, err
}

// withCloudConfCredential is magnum-cluster-api's cloud-config Secret
// manifest with cred in its cloud.conf.
func withCloudConfCredential(manifest []byte, cred *model.ClusterCredential) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(manifest, &doc); err != nil || doc == nil {
		return nil, errors.New("its cloud-config-secret.yaml is not YAML")
	}
	data, _ := doc["stringData"].(map[string]any)
	conf, _ := data["cloud.conf"].(string)
	if len(cloudConfCredential.FindAllString(conf, -1)) != 2 {
		return nil, errors.New("the cloud.conf in its cloud-config-secret.yaml has no application credential to replace")
	}
	data["cloud.conf"] = cloudConfCredential.ReplaceAllStringFunc(conf, func(line string) string {
		key := cloudConfCredential.FindStringSubmatch(line)[1]
		if strings.HasPrefix(key, "application-credential-id") {
			return key + cred.ID
		}
		return key + cred.Secret
	})
	return yaml.Marshal(doc)
}

// holdsCloudConfCredential says whether magnum-cluster-api's cloud-config
// Secret manifest already carries cred.
func holdsCloudConfCredential(manifest []byte, cred *model.ClusterCredential) bool {
	var doc map[string]any
	if err := yaml.Unmarshal(manifest, &doc); err != nil {
		return false
	}
	data, _ := doc["stringData"].(map[string]any)
	conf, _ := data["cloud.conf"].(string)
	want := map[string]string{"application-credential-id": cred.ID, "application-credential-secret": cred.Secret}
	found := 0
	for _, m := range cloudConfCredential.FindAllStringSubmatch(conf, -1) {
		key, value := strings.TrimSpace(strings.TrimRight(m[1], "= \t")), strings.TrimSpace(m[0][len(m[1]):])
		if want[key] != value {
			return false
		}
		found++
	}
	return found == 2
}

// topologyVariable is the value of a Cluster's topology variable, or "".
func topologyVariable(cl *unstructured.Unstructured, name string) string {
	vars, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "variables")
	for _, v := range vars {
		if m, ok := v.(map[string]any); ok && m["name"] == name {
			s, _ := m["value"].(string)
			return s
		}
	}
	return ""
}

// deleteForeignCredentialOf deletes, with an adopted cluster, the
// application credential its driver made for it, as the driver does once
// the cluster is gone (magnum-cluster-api: driver.py update_cluster_status
// on DELETE_IN_PROGRESS; magnum-capi-helm likewise): the one in the
// clouds.yaml of its cloud credentials Secret, unless that is one
// Magnetite issued (its own are deleted with the cluster's).
func (c *Conductor) deleteForeignCredentialOf(ctx context.Context, cl *model.Cluster, a *model.ForeignCluster) error {
	name, cloudName := a.Name+"-cloud-config", ""
	if a.Driver == driverMCH {
		name, cloudName = a.HelmRelease+"-cloud-credentials", "openstack"
	}
	secret, err := c.mc.Get(ctx, "Secret", a.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	dc, err := cloud.ParseCloudsYAML(secretValue(secret, "clouds.yaml"), nil, cloudName)
	if err != nil {
		c.event(ctx, cl.UUID, model.EventOperation, "", "credential",
			fmt.Sprintf("the application credential %s made for the cluster was not deleted: Secret %s/%s: %v", a.Driver, a.Namespace, name, err))
		return nil
	}
	own, err := c.st.ClusterCredentials(ctx, cl.UUID)
	if err != nil {
		return err
	}
	for _, cred := range own {
		if cred.ID == dc.CredentialID {
			return nil
		}
	}
	c.deleteForeignCredential(ctx, cl, dc.CredentialID)
	return nil
}
