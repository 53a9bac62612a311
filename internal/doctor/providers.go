package doctor

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// contractLabelPrefix starts the labels a provider puts on its CRDs to say
// which of their versions implements which Cluster API contract
// ("cluster.x-k8s.io/v1beta1: v1beta1"); Cluster API reads them.
const contractLabelPrefix = "cluster.x-k8s.io/v"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Providers is what a management cluster tells of the Cluster API providers
// installed in it: the release of each provider Deployment (its manager's
// image tag; clusterctl labels both the Deployment and the CRDs with the
// provider's name) and the contract labels of each kind's CRD.
type Providers struct {
	// releases: provider name -> "v0.14.7 (image ... of deployment ns/name)".
	releases map[string]string
	// provider and contracts by kind: the CRD's provider label and its
	// contract labels ("v1beta1=v1beta1").
	provider  map[string]string
	contracts map[string][]string
}

// FindProviders reads the provider Deployments and the Cluster API CRDs.
// What it cannot read (no rights to list Deployments or CRDs) is left out:
// the versions served are still checked, only their provenance is not named.
func FindProviders(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface) Providers {
	p := Providers{releases: map[string]string{}, provider: map[string]string{}, contracts: map[string][]string{}}
	if deps, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: providerLabel}); err == nil {
		for _, d := range deps.Items {
			for _, c := range d.Spec.Template.Spec.Containers {
				if tag := imageTag(c.Image); tag != "" {
					p.releases[d.Labels[providerLabel]] = fmt.Sprintf("%s (image %s of deployment %s/%s)", tag, c.Image, d.Namespace, d.Name)
					break
				}
			}
		}
	}
	if crds, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{}); err == nil {
		for _, crd := range crds.Items {
			group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			if !strings.HasSuffix(group, "cluster.x-k8s.io") {
				continue
			}
			labels := crd.GetLabels()
			p.provider[kind] = labels[providerLabel]
			for k, v := range labels {
				if contract, ok := strings.CutPrefix(k, "cluster.x-k8s.io/"); ok && strings.HasPrefix(k, contractLabelPrefix) {
					p.contracts[kind] = append(p.contracts[kind], "contract "+contract+" at "+v)
				}
			}
			sort.Strings(p.contracts[kind])
		}
	}
	return p
}

// imageTag is the tag of a container image reference, "" without one.
func imageTag(image string) string {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	return image[i+1:]
}

// describe names where the kinds' release shows: the image tag of their
// provider's Deployment, else their CRDs' contract labels.
func (p Providers) describe(kindNames []string) string {
	for _, k := range kindNames {
		if rel, ok := p.releases[p.provider[k]]; ok && p.provider[k] != "" {
			return "release " + rel
		}
	}
	for _, k := range kindNames {
		if c := p.contracts[k]; len(c) > 0 {
			return "CRDs labelled for Cluster API " + strings.Join(c, ", ")
		}
	}
	return ""
}

// writtenVersions sums up the versions a kind set is written at, from its
// resolved "Kind group/version" descriptions.
func writtenVersions(descs []string) string {
	var gvs []string
	for _, d := range descs {
		f := strings.Fields(d)
		if len(f) >= 2 && !slices.Contains(gvs, f[1]) {
			gvs = append(gvs, f[1])
		}
	}
	return strings.Join(gvs, ", ")
}
