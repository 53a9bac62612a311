package addons

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxConfigMapData is how much YAML one addon ConfigMap carries. The API
// server refuses a ConfigMap whose data exceed 1 MiB; the rest is left for
// its metadata.
const MaxConfigMapData = 850_000

// Pack groups an addon's documents, in order, into parts of at most budget
// bytes each, one ConfigMap per part. A CustomResourceDefinition too large
// for a part on its own (Calico's Installation is about 1.4 MB) loses the
// descriptions of its schema, which only `kubectl explain` shows; anything
// still too large is an error. Custom resources of the addon's own CRDs
// (Calico's Installation) come last, in parts of their own: the
// ClusterResourceSet applies a ConfigMap as a whole, and a resource whose
// CRD is not yet established fails, so it must not hold up the rest.
func Pack(addon string, docs []string, budget int) ([][]string, []string, error) {
	plain, custom := splitCustomResources(docs)
	parts, warnings, err := pack(addon, plain, budget)
	if err != nil || len(custom) == 0 {
		return parts, warnings, err
	}
	crParts, _, err := pack(addon, custom, budget)
	return append(parts, crParts...), warnings, err
}

// splitCustomResources separates the documents whose kind one of the
// documents' CustomResourceDefinitions defines.
func splitCustomResources(docs []string) (plain, custom []string) {
	type head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
		} `json:"spec"`
	}
	heads := make([]head, len(docs))
	defined := map[string]bool{}
	for i, d := range docs {
		_ = yaml.Unmarshal([]byte(d), &heads[i])
		if heads[i].Kind == "CustomResourceDefinition" {
			defined[heads[i].Spec.Group+"/"+heads[i].Spec.Names.Kind] = true
		}
	}
	for i, d := range docs {
		group, _, _ := strings.Cut(heads[i].APIVersion, "/")
		if strings.Contains(heads[i].APIVersion, "/") && defined[group+"/"+heads[i].Kind] {
			custom = append(custom, d)
		} else {
			plain = append(plain, d)
		}
	}
	return plain, custom
}

func pack(addon string, docs []string, budget int) ([][]string, []string, error) {
	var parts [][]string
	var warnings []string
	size := 0
	for _, d := range docs {
		if len(d) > budget {
			small, name, err := withoutDescriptions(d)
			if err != nil {
				return nil, nil, fmt.Errorf("addon %s: %w", addon, err)
			}
			if len(small) > budget {
				return nil, nil, fmt.Errorf("addon %s: %s is %d bytes, more than a ClusterResourceSet ConfigMap holds (%d)", addon, name, len(d), budget)
			}
			warnings = append(warnings, fmt.Sprintf("addon %s: %s is %d bytes, more than one ConfigMap holds; it is delivered without the descriptions of its schema (%d bytes)", addon, name, len(d), len(small)))
			d = small
		}
		if len(parts) == 0 || size+len(d)+4 > budget {
			parts = append(parts, nil)
			size = 0
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], d)
		size += len(d) + 4 // "---\n"
	}
	return parts, warnings, nil
}

// withoutDescriptions drops the descriptions of a CRD's schemas.
func withoutDescriptions(doc string) (string, string, error) {
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return "", "", err
	}
	md, _ := obj["metadata"].(map[string]any)
	name := fmt.Sprintf("%v %v", obj["kind"], md["name"])
	if obj["kind"] != "CustomResourceDefinition" {
		return doc, name, nil
	}
	spec, _ := obj["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		if vm, ok := v.(map[string]any); ok {
			if sch, ok := vm["schema"].(map[string]any); ok {
				stripDescriptions(sch["openAPIV3Schema"])
			}
		}
	}
	b, err := yaml.Marshal(obj)
	return string(b), name, err
}

// stripDescriptions removes "description" from a JSON schema and all its
// sub-schemas; under "properties" the keys are field names, kept whatever
// they are called.
func stripDescriptions(schema any) {
	switch s := schema.(type) {
	case map[string]any:
		if d, ok := s["description"].(string); ok && d != "" {
			delete(s, "description")
		}
		for k, v := range s {
			if k == "properties" || k == "patternProperties" || k == "definitions" {
				if props, ok := v.(map[string]any); ok {
					for _, p := range props {
						stripDescriptions(p)
					}
				}
				continue
			}
			stripDescriptions(v)
		}
	case []any:
		for _, v := range s {
			stripDescriptions(v)
		}
	}
}
