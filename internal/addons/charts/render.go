package charts

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// Render pulls a release's charts and renders them as `helm template`
// would, for the workload cluster's Kubernetes version: CRDs first, then
// every object of the templates, each with its namespace set, and the
// release's namespace when it is not one every cluster has. Hooks that run
// at install or upgrade are kept as plain objects; delete, rollback and
// test hooks are dropped (Magnetite never uninstalls a release: the
// workload cluster goes with the cluster). The result is one YAML
// document per object.
func (s *Source) Render(ctx context.Context, rel addons.Release) ([]string, error) {
	var docs []string
	if rel.Namespace != "kube-system" && rel.Namespace != "default" {
		docs = append(docs, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+rel.Namespace+"\n")
	}
	for _, c := range rel.Pin.Charts {
		p, err := s.Pull(ctx, c)
		if err != nil {
			return nil, err
		}
		ch, err := loader.LoadArchive(readArchive(p.Archive))
		if err != nil {
			return nil, fault.Wrap(ErrRender, err, "%s from %s cannot be loaded: %v", c, p.From, err)
		}
		out, err := renderChart(ctx, ch, rel)
		if err != nil {
			return nil, fault.Wrap(ErrRender, err, "%s for %s: %v", c, rel.Addon, err)
		}
		docs = append(docs, out...)
	}
	return docs, nil
}

func renderChart(ctx context.Context, ch *chart.Chart, rel addons.Release) ([]string, error) {
	if err := action.CheckDependencies(ch, ch.Metadata.Dependencies); err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{})
	install.ClientOnly, install.DryRun, install.Replace, install.IncludeCRDs = true, true, true, true
	install.ReleaseName, install.Namespace = rel.Addon, rel.Namespace
	install.DisableOpenAPIValidation = true
	if rel.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(rel.KubeVersion)
		if err != nil {
			return nil, err
		}
		install.KubeVersion = kv
	}
	vals := rel.Values
	if rel.Registry != "" {
		vals = chartutil.CoalesceTables(copyValues(rel.Values), ImageValues(ch.Values, rel.Registry))
	}
	r, err := install.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, err
	}
	manifests := []string{r.Manifest}
	for _, h := range r.Hooks {
		if installHook(h) {
			manifests = append(manifests, h.Manifest)
		}
	}
	var objs []*unstructured.Unstructured
	for _, m := range manifests {
		split := releaseutil.SplitManifests(m)
		keys := make([]string, 0, len(split))
		for k := range split {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(split[k]), &u.Object); err != nil {
				return nil, fmt.Errorf("rendered object is not YAML: %w", err)
			}
			if len(u.Object) == 0 {
				continue
			}
			objs = append(objs, u)
		}
	}
	if rel.Addon == addons.KeystoneAuth && len(rel.KeystoneCA) > 0 {
		var err error
		if objs, err = withKeystoneCA(objs, rel); err != nil {
			return nil, err
		}
	}
	clusterKinds := clusterScopedKinds(objs)
	out := make([]string, 0, len(objs))
	for _, u := range objs {
		if u.GetNamespace() == "" && !clusterKinds[u.GetKind()] {
			// Helm's client sets the namespace when it applies; a
			// ClusterResourceSet does not.
			u.SetNamespace(rel.Namespace)
		}
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}

func installHook(h *release.Hook) bool {
	for _, e := range h.Events {
		switch e {
		case release.HookPreInstall, release.HookPostInstall, release.HookPreUpgrade, release.HookPostUpgrade:
			return true
		}
	}
	return false
}

// builtinClusterKinds are the cluster-scoped kinds addon charts create.
var builtinClusterKinds = []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
	"StorageClass", "CSIDriver", "PriorityClass", "APIService", "ValidatingWebhookConfiguration",
	"MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
	"PersistentVolume", "IngressClass", "RuntimeClass", "VolumeSnapshotClass", "Node"}

// clusterScopedKinds are the built-in cluster-scoped kinds and those of the
// rendered CRDs whose scope is Cluster (Calico's Installation).
func clusterScopedKinds(objs []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, k := range builtinClusterKinds {
		out[k] = true
	}
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		if strings.EqualFold(scope, "Cluster") && kind != "" {
			out[kind] = true
		}
	}
	return out
}
