package conductor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// Rebasing (OpClusterRebase, `magnetite cluster rebase`) moves a cluster
// adopted from magnum-cluster-api onto Magnetite's own ClusterClass, after
// which Magnetite renders and applies its objects as for a cluster it
// built. The Cluster keeps its namespace and name (Cluster API cannot
// rename one), and three things stay as the driver built them:
//
//   - the OpenStackCluster: network, subnets, router, API load balancer and
//     security groups. CAPO refuses changes to nearly all of its spec
//     (v0.14.7 pkg/webhooks/openstackcluster_webhook.go ValidateUpdate), so
//     Magnetite's ClusterClass is given the live spec as the cluster's
//     infrastructure variable; its identityRef names the Secret Magnetite
//     writes (the one the driver wrote, "<stack_id>-cloud-config"), whose
//     clouds.yaml keeps the cloud name CAPO reads, so CAPO never loses its
//     credentials while the class changes;
//   - the Cluster's network (pod and service ranges, DNS domain);
//   - the workload's addons: magnum-cluster-api's ClusterResourceSets keep
//     delivering the CNI, cloud provider and CSI; Magnetite installs none
//     and writes rotated credentials into the cloud-provider Secret they
//     deliver.
//
// Everything the machines are made from changes (Magnetite's kubeadm
// configuration, machine templates and bootstrap), so Cluster API rolls
// every machine: the control plane one at a time, then each machine
// deployment by its rollout strategy. The driver's application credential
// becomes the cluster's Magnetite credential (rotated and deleted as
// Magnetite's own from then on).
//
// magnum-capi-helm's clusters are refused: their Cluster has no managed
// topology, and Cluster API forbids setting a ClusterClass on an existing
// Cluster ("classRef cannot be set on an existing Cluster",
// core/webhooks/admission/cluster.go in v1.14): their machines cannot move
// without rebuilding the cluster.

// rebaseAdopted moves an adopted cluster onto Magnetite's ClusterClass.
// live is its Cluster as the management cluster serves it.
func (c *Conductor) rebaseAdopted(ctx context.Context, sc *scope, op *model.Operation, a *model.ForeignCluster, live *unstructured.Unstructured) (Result, error) {
	if a.Driver != driverMCA {
		return Done, permanentf("cluster %s was adopted from %s, whose Cluster has no ClusterClass: Cluster API refuses to put an existing Cluster under one, so it cannot be moved onto Magnetite's without being rebuilt; it stays as it is, adopted", sc.cluster.Name, a.Driver)
	}
	for _, ng := range sc.nodeGroups {
		if ng.Role == model.RoleMaster {
			continue
		}
		if md, want := a.MachineDeploymentOf(ng), driver.DNSLabel(ng.Name, 40); md != want {
			return Done, permanentf("node group %s is the machine deployment %q of Cluster %s/%s, and Magnetite's ClusterClass names it %q: Cluster API would delete it and make a new one (losing its nodes at once) instead of rolling it; nothing was changed", ng.Name, md, a.Namespace, a.Name, want)
		}
	}
	osc, err := c.infrastructureCluster(ctx, live)
	if err != nil {
		return Done, err
	}
	network, _, _ := unstructured.NestedMap(live.Object, "spec", "clusterNetwork")
	oscSpec, _, _ := unstructured.NestedMap(osc.Object, "spec")
	// CAPO writes the endpoint it made; Cluster API's topology leaves it
	// alone (it ignores that path), so the class must not set it.
	delete(oscSpec, "controlPlaneEndpoint")
	kept := &model.KeptInfrastructure{ClusterNetwork: network, InfrastructureCluster: oscSpec, Addons: true}

	if err := c.takeOverCredential(ctx, sc, a, live); err != nil {
		return Done, err
	}
	moved := *sc
	moved.cluster = rebasedCopy(sc.cluster, kept)
	res, err := c.render(ctx, &moved)
	if err != nil {
		return Done, err
	}
	if err := c.checkRebase(ctx, live, osc, res.Objects); err != nil {
		return Done, err
	}
	secrets, err := c.desiredSecrets(ctx, &moved, res.Secrets)
	if err != nil {
		return Done, err
	}
	// The class, its templates and the Secrets first: the Cluster refers
	// to them.
	var rendered *unstructured.Unstructured
	for _, o := range append(secrets, res.Objects...) {
		if o.GetKind() == "Cluster" {
			rendered = o
			continue
		}
		if _, err := c.mc.Apply(ctx, moved.owner, o); err != nil {
			return Done, classifyApplyError(err)
		}
	}
	if rendered == nil {
		return Done, permanentf("the render of cluster %s has no Cluster", sc.cluster.Name)
	}
	// The whole topology is replaced: magnum-cluster-api's variables are
	// not Magnetite's class's, and a server-side apply would keep them as
	// its driver's fields. The test makes sure nobody moved the Cluster
	// to another class meanwhile (its status changes all the time, so its
	// resource version cannot be the test).
	topology, _, _ := unstructured.NestedMap(rendered.Object, "spec", "topology")
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/spec/topology/classRef/name", "value": classRefName(live)},
		{"op": "replace", "path": "/spec/topology", "value": topology},
	})
	if err != nil {
		return Done, err
	}
	if err := c.mc.JSONPatch(ctx, "Cluster", a.Namespace, a.Name, patch); err != nil {
		return Done, classifyApplyError(err)
	}
	if err := c.recordRebase(ctx, sc.cluster.UUID, kept); err != nil {
		return Done, err
	}
	c.event(ctx, sc.cluster.UUID, model.EventOperation, "", string(op.Type), fmt.Sprintf(
		"moved Cluster %s/%s from %s's ClusterClass %s onto Magnetite's %s: Cluster API replaces every machine (%s); the OpenStackCluster %s, the Cluster's network and %s's addons stay as they were",
		a.Namespace, a.Name, a.Driver, classRefName(live), classRefName(rendered), rollsWhat(live), osc.GetName(), a.Driver))
	// From now on the cluster is Magnetite's: apply its whole desired
	// state as for any other.
	next, err := c.load(ctx, sc.cluster.UUID)
	if err != nil {
		return Done, err
	}
	return c.apply(ctx, next, op)
}

// rebasedCopy is the cluster as it is once rebased.
func rebasedCopy(cl *model.Cluster, kept *model.KeptInfrastructure) *model.Cluster {
	out := *cl
	imp := *cl.Imported
	f := *cl.Imported.ClusterAPI
	f.Adopted, f.Rebased, f.Kept = false, true, kept
	imp.ClusterAPI = &f
	out.Imported = &imp
	return &out
}

// recordRebase records that the cluster is Magnetite's now.
func (c *Conductor) recordRebase(ctx context.Context, uuid string, kept *model.KeptInfrastructure) error {
	return c.changeCluster(ctx, uuid, func(cl *model.Cluster) (store.ClusterChange, error) {
		if cl.Imported == nil || cl.Imported.ClusterAPI == nil {
			return store.ClusterChange{}, permanentf("cluster %s no longer records where its Cluster API objects are", cl.Name)
		}
		return store.ClusterChange{Cluster: rebasedCopy(cl, kept)}, nil
	})
}

// staleAttempts is how many times changeCluster reads and writes a
// cluster before it gives up.
const staleAttempts = 10

// changeCluster reads cluster uuid, lets edit make a change of it and
// writes that change. The cluster's status is written all the time (the
// conductor's own watch of the management cluster writes it at every
// move of a machine), and the store refuses a write from a read another
// write has since overtaken (store.ErrStale): changeCluster then reads
// and edits again.
func (c *Conductor) changeCluster(ctx context.Context, uuid string, edit func(*model.Cluster) (store.ClusterChange, error)) error {
	for attempt := 1; ; attempt++ {
		cl, err := c.st.GetClusterByUUID(ctx, uuid)
		if err != nil {
			return err
		}
		ch, err := edit(cl)
		if err != nil {
			return err
		}
		err = c.st.ApplyClusterChange(ctx, ch)
		if errors.Is(err, store.ErrStale) && attempt < staleAttempts && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// infrastructureCluster reads the Cluster's infrastructure cluster.
func (c *Conductor) infrastructureCluster(ctx context.Context, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	kind, _, _ := unstructured.NestedString(live.Object, "spec", "infrastructureRef", "kind")
	name, _, _ := unstructured.NestedString(live.Object, "spec", "infrastructureRef", "name")
	if kind == "" || name == "" {
		return nil, fmt.Errorf("the Cluster %s/%s has no infrastructure cluster yet", live.GetNamespace(), live.GetName())
	}
	osc, err := c.mc.Get(ctx, kind, live.GetNamespace(), name)
	if err != nil {
		return nil, fmt.Errorf("read the Cluster's %s %s/%s: %w", kind, live.GetNamespace(), name, err)
	}
	return osc, nil
}

// takeOverCredential makes the application credential the driver gave
// the cluster its Magnetite credential, unless it has one already (one
// rotated since the adoption).
func (c *Conductor) takeOverCredential(ctx context.Context, sc *scope, a *model.ForeignCluster, live *unstructured.Unstructured) error {
	creds, err := c.st.ClusterCredentials(ctx, sc.cluster.UUID)
	if err != nil {
		return err
	}
	if len(creds) > 0 && !creds[0].Retired {
		return nil
	}
	name := topologyVariable(live, "clusterIdentityRefName")
	if name == "" {
		name = a.Name + "-cloud-config" // resources.py CloudConfigSecret
	}
	secret, err := c.mc.Get(ctx, "Secret", a.Namespace, name)
	if err != nil {
		return fmt.Errorf("read the cluster's cloud credentials Secret %s/%s: %w", a.Namespace, name, err)
	}
	dc, err := cloud.ParseCloudsYAML(secretValue(secret, "clouds.yaml"), nil, "")
	if err != nil {
		return permanentf("Secret %s/%s: %v", a.Namespace, name, err)
	}
	if dc.CredentialID == "" || dc.CredentialSecret == "" {
		return permanentf("Secret %s/%s holds no application credential for Magnetite to take over", a.Namespace, name)
	}
	err = c.st.ApplyClusterChange(ctx, store.ClusterChange{Credential: &model.ClusterCredential{
		ID: dc.CredentialID, Secret: dc.CredentialSecret, ClusterID: sc.cluster.UUID,
		UserID: sc.cluster.UserID, ProjectID: sc.cluster.ProjectID,
	}})
	if errors.Is(err, store.ErrConflict) {
		return nil // recorded by an attempt cut short
	}
	return err
}

// checkRebase refuses a rebase Cluster API or CAPO would refuse, before
// anything changes: Cluster API lets a Cluster change class only to one
// whose infrastructure cluster, control plane and control plane machine
// templates are of the same kinds (internal/topology/check/compatibility.go
// ClusterClassesAreCompatible, v1.14), and CAPO v0.14.7 refuses any change
// to an OpenStackCluster's spec but its identityRef and a few fields a
// class does not set (ValidateUpdate).
func (c *Conductor) checkRebase(ctx context.Context, live, osc *unstructured.Unstructured, objs []*unstructured.Unstructured) error {
	var class *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ClusterClass" {
			class = o
		}
	}
	if class == nil {
		return permanentf("the render has no ClusterClass")
	}
	ns := live.GetNamespace()
	if n, _, _ := unstructured.NestedString(live.Object, "spec", "topology", "classRef", "namespace"); n != "" {
		ns = n
	}
	old, err := c.mc.Get(ctx, "ClusterClass", ns, classRefName(live))
	if err != nil {
		return fmt.Errorf("read the Cluster's ClusterClass %s/%s: %w", ns, classRefName(live), err)
	}
	var problems []string
	for _, path := range [][]string{
		{"spec", "infrastructure", "templateRef"},
		{"spec", "controlPlane", "templateRef"},
		{"spec", "controlPlane", "machineInfrastructure", "templateRef"},
	} {
		was, now := templateKind(old, path), templateKind(class, path)
		if was != now {
			problems = append(problems, fmt.Sprintf("%s is %s in %s and %s in Magnetite's", strings.Join(path, "."), was, old.GetName(), now))
		}
	}
	if len(problems) > 0 {
		return permanentf("Cluster API refuses to move the Cluster between incompatible ClusterClasses: %s; nothing was changed", strings.Join(problems, "; "))
	}
	previews, err := capi.Preview(objs)
	if err != nil {
		return permanentf("%v", err)
	}
	for _, p := range previews {
		if p.GetKind() != osc.GetKind()+"Template" {
			continue
		}
		want, _, _ := unstructured.NestedMap(p.Object, "spec", "template", "spec")
		have, _, _ := unstructured.NestedMap(osc.Object, "spec")
		if changed := changedFields(have, want, "identityRef", "controlPlaneEndpoint"); len(changed) > 0 {
			return permanentf("Magnetite's ClusterClass would change the %s's %s, which CAPO refuses to change; nothing was changed", osc.GetKind(), strings.Join(changed, ", "))
		}
		return nil
	}
	return permanentf("the render has no %sTemplate", osc.GetKind())
}

// changedFields are the top-level fields in which have and want differ,
// but those ignored.
func changedFields(have, want map[string]any, ignored ...string) []string {
	var out []string
	keys := slices.Sorted(maps.Keys(have))
	for k := range want {
		if _, ok := have[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if slices.Contains(ignored, k) {
			continue
		}
		if !reflect.DeepEqual(have[k], want[k]) {
			out = append(out, "spec."+k)
		}
	}
	return out
}

// templateKind is the group and kind of the template a ClusterClass
// refers to at path.
func templateKind(class *unstructured.Unstructured, path []string) string {
	ref, _, _ := unstructured.NestedMap(class.Object, path...)
	apiVersion, _ := ref["apiVersion"].(string)
	kind, _ := ref["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupKind{Group: gv.Group, Kind: kind}.String()
}

func classRefName(cl *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "name")
	return name
}

// rollsWhat says which machines a rebase replaces, from the topology.
func rollsWhat(cl *unstructured.Unstructured) string {
	cp, _, _ := unstructured.NestedInt64(cl.Object, "spec", "topology", "controlPlane", "replicas")
	parts := []string{fmt.Sprintf("%d control plane", cp)}
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	for _, x := range mds {
		md, _ := x.(map[string]any)
		n, _, _ := unstructured.NestedInt64(md, "replicas")
		parts = append(parts, fmt.Sprintf("%d of %v", n, md["name"]))
	}
	return strings.Join(parts, ", ")
}

// writeKeptAddonsCredential writes the active credential into the Secret
// that carries it to the addons a rebased cluster kept from
// magnum-cluster-api (its cloud provider and CSI).
func (c *Conductor) writeKeptAddonsCredential(ctx context.Context, sc *scope) error {
	r := sc.cluster.Rebased()
	if r == nil || r.Driver != driverMCA || r.Kept == nil || !r.Kept.Addons {
		return nil
	}
	creds, err := c.st.ClusterCredentials(ctx, sc.cluster.UUID)
	if err != nil || len(creds) == 0 || creds[0].Retired {
		return err
	}
	_, err = c.writeMCACloudProvider(ctx, r, creds[0])
	return err
}
