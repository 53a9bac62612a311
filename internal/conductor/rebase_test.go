package conductor

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// TestRebaseRefusesAnOpenStackClusterChangeCAPORefuses: the check before a
// rebase names every OpenStackCluster field Magnetite's class would
// change, but the credentials CAPO lets change and the endpoint CAPO
// writes itself.
func TestRebaseRefusesAnOpenStackClusterChangeCAPORefuses(t *testing.T) {
	have := map[string]any{
		"identityRef":          map[string]any{"name": "kube-ab12c-cloud-config", "cloudName": "default"},
		"managedSubnets":       []any{map[string]any{"cidr": "10.0.0.0/24"}},
		"externalNetwork":      map[string]any{"id": "ext"},
		"controlPlaneEndpoint": map[string]any{"host": "192.0.2.1", "port": int64(6443)},
	}
	want := map[string]any{
		"identityRef":     map[string]any{"name": "kube-ab12c-cloud-config", "cloudName": "openstack"},
		"managedSubnets":  []any{map[string]any{"cidr": "10.6.0.0/24"}},
		"externalNetwork": map[string]any{"id": "ext"},
		"tags":            []any{"magnetite-cluster-x"},
	}
	got := changedFields(have, want, "identityRef", "controlPlaneEndpoint")
	if w := []string{"spec.managedSubnets", "spec.tags"}; !reflect.DeepEqual(got, w) {
		t.Errorf("changed fields %v, want %v", got, w)
	}
	want["managedSubnets"], want["tags"] = have["managedSubnets"], nil
	delete(want, "tags")
	if got := changedFields(have, want, "identityRef", "controlPlaneEndpoint"); len(got) != 0 {
		t.Errorf("the kept spec with Magnetite's credentials is reported changed: %v", got)
	}
}

// TestRebasedCopyLeavesTheClusterAsItWas: the rebased record is a copy;
// the cluster the operation read keeps saying it is adopted until the
// store says otherwise.
func TestRebasedCopyLeavesTheClusterAsItWas(t *testing.T) {
	cl := &model.Cluster{UUID: "c", Imported: &model.Imported{MagnumDriver: "magnum-cluster-api",
		ClusterAPI: &model.ForeignCluster{Driver: driverMCA, Namespace: "magnum-system", Name: "kube-ab12c", Adopted: true}}}
	kept := &model.KeptInfrastructure{Addons: true}
	r := rebasedCopy(cl, kept)
	if cl.Adopted() == nil || cl.Rebased() != nil {
		t.Errorf("the original changed: %+v", cl.Imported.ClusterAPI)
	}
	if r.Adopted() != nil || r.Rebased() == nil || r.Rebased().Kept != kept || r.Rebased().Namespace != "magnum-system" {
		t.Errorf("the copy: %+v", r.Imported.ClusterAPI)
	}
}

func TestRollsWhatNamesEveryMachineGroup(t *testing.T) {
	cl := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"topology": map[string]any{
		"controlPlane": map[string]any{"replicas": int64(3)},
		"workers": map[string]any{"machineDeployments": []any{
			map[string]any{"name": "default-worker", "replicas": int64(4)},
			map[string]any{"name": "gpu", "replicas": int64(1)},
		}},
	}}}}
	if got, want := rollsWhat(cl), "3 control plane, 4 of default-worker, 1 of gpu"; got != want {
		t.Errorf("rollsWhat = %q, want %q", got, want)
	}
}

// TestMCACloudProviderSecretIsRewrittenOnlyForANewCredential: the
// cloud.conf magnum-cluster-api delivers to a rebased cluster's workload
// takes the active credential, and a manifest that holds it already is
// left alone (no patch on every apply).
func TestMCACloudProviderSecretIsRewrittenOnlyForANewCredential(t *testing.T) {
	manifest := []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: cloud-config\n  namespace: kube-system\nstringData:\n" +
		"  cloud.conf: |\n    [Global]\n    auth-url=http://keystone/v3\n    application-credential-id = old-id\n    application-credential-secret = old-secret\n")
	old := &model.ClusterCredential{ID: "old-id", Secret: "old-secret"}
	next := &model.ClusterCredential{ID: "new-id", Secret: "new-secret"}
	if !holdsCloudConfCredential(manifest, old) {
		t.Error("the manifest holding the credential is said not to")
	}
	if holdsCloudConfCredential(manifest, next) {
		t.Error("the manifest with the old credential is said to hold the new one")
	}
	rewritten, err := withCloudConfCredential(manifest, next)
	if err != nil {
		t.Fatal(err)
	}
	if !holdsCloudConfCredential(rewritten, next) || holdsCloudConfCredential(rewritten, old) {
		t.Errorf("rewritten manifest does not hold the new credential alone:\n%s", rewritten)
	}
}
