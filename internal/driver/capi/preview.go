package capi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Preview returns the templates Cluster API derives for a rendered
// cluster: each ClusterClass template with the Cluster's variables patched
// in, as the topology controller does. There is one infrastructure cluster
// template, the control plane's template and machine template, and a
// bootstrap and a machine template per machine deployment; each is named
// after the Cluster and the part it is for (NAME-control-plane-machine,
// NAME-md-<group>-machine, ...). It only understands the patches this
// package writes (add or replace from a variable or a value).
func Preview(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var cluster, cc *unstructured.Unstructured
	templates := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		switch {
		case o.GetKind() == "Cluster":
			cluster = o
		case o.GetKind() == "ClusterClass":
			cc = o
		case strings.HasSuffix(o.GetKind(), "Template"):
			templates[o.GetKind()+"/"+o.GetName()] = o
		}
	}
	if cluster == nil || cc == nil {
		return nil, fmt.Errorf("capi: preview needs a Cluster and its ClusterClass")
	}
	global, err := variables(cluster.Object, "spec", "topology", "variables")
	if err != nil {
		return nil, err
	}
	type target struct {
		name    string
		tmpl    *unstructured.Unstructured
		vars    map[string]any
		match   func(mr map[string]any) bool
		mdClass string
	}
	refIn := func(root map[string]any, path ...string) (*unstructured.Unstructured, error) {
		kind, _, _ := unstructured.NestedString(root, append(path, "kind")...)
		name, _, _ := unstructured.NestedString(root, append(path, "name")...)
		t, ok := templates[kind+"/"+name]
		if !ok {
			return nil, fmt.Errorf("capi: the ClusterClass refers to %s %s, which was not rendered", kind, name)
		}
		return t, nil
	}
	ref := func(path ...string) (*unstructured.Unstructured, error) { return refIn(cc.Object, path...) }
	var targets []target
	add := func(name string, vars map[string]any, match func(map[string]any) bool, path ...string) error {
		t, err := ref(path...)
		if err != nil {
			return err
		}
		targets = append(targets, target{name: cluster.GetName() + "-" + name, tmpl: t, vars: vars, match: match})
		return nil
	}
	isTrue := func(key string) func(map[string]any) bool {
		return func(mr map[string]any) bool { b, _ := mr[key].(bool); return b }
	}
	if err := add("cluster", global, isTrue("infrastructureCluster"), "spec", "infrastructure", "templateRef"); err != nil {
		return nil, err
	}
	if err := add("control-plane", global, isTrue("controlPlane"), "spec", "controlPlane", "templateRef"); err != nil {
		return nil, err
	}
	if err := add("control-plane-machine", global, isTrue("controlPlane"), "spec", "controlPlane", "machineInfrastructure", "templateRef"); err != nil {
		return nil, err
	}
	classes, _, _ := unstructured.NestedSlice(cc.Object, "spec", "workers", "machineDeployments")
	mds, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "topology", "workers", "machineDeployments")
	for _, x := range mds {
		md, _ := x.(map[string]any)
		class, _ := md["class"].(string)
		name, _ := md["name"].(string)
		var classDef map[string]any
		for _, c := range classes {
			if cm, _ := c.(map[string]any); cm["class"] == class {
				classDef = cm
			}
		}
		if classDef == nil {
			return nil, fmt.Errorf("capi: machine deployment %s uses class %q, which the ClusterClass lacks", name, class)
		}
		over, err := variables(md, "variables", "overrides")
		if err != nil {
			return nil, err
		}
		vars := map[string]any{}
		for k, v := range global {
			vars[k] = v
		}
		for k, v := range over {
			vars[k] = v
		}
		match := func(mr map[string]any) bool {
			mdc, _ := mr["machineDeploymentClass"].(map[string]any)
			names, _ := mdc["names"].([]any)
			for _, n := range names {
				if n == class {
					return true
				}
			}
			return false
		}
		for _, part := range []struct{ suffix, field string }{{"bootstrap", "bootstrap"}, {"machine", "infrastructure"}} {
			t, err := refIn(classDef, part.field, "templateRef")
			if err != nil {
				return nil, err
			}
			targets = append(targets, target{name: cluster.GetName() + "-md-" + name + "-" + part.suffix, tmpl: t, vars: vars, match: match, mdClass: class})
		}
	}

	patches, _, _ := unstructured.NestedSlice(cc.Object, "spec", "patches")
	var out []*unstructured.Unstructured
	for _, t := range targets {
		obj := t.tmpl.DeepCopy()
		obj.SetName(t.name)
		for _, p := range patches {
			if on, err := enabled(p.(map[string]any)["enabledIf"], t.vars); err != nil || !on {
				if err != nil {
					return nil, fmt.Errorf("capi: patch %v: %w", p.(map[string]any)["name"], err)
				}
				continue
			}
			defs, _ := p.(map[string]any)["definitions"].([]any)
			for _, d := range defs {
				def, _ := d.(map[string]any)
				sel, _ := def["selector"].(map[string]any)
				mr, _ := sel["matchResources"].(map[string]any)
				if sel["kind"] != obj.GetKind() || sel["apiVersion"] != obj.GetAPIVersion() || !t.match(mr) {
					continue
				}
				ops, _ := def["jsonPatches"].([]any)
				for _, o := range ops {
					if err := applyOp(obj.Object, o.(map[string]any), t.vars); err != nil {
						return nil, fmt.Errorf("capi: patch %v on %s: %w", p.(map[string]any)["name"], t.name, err)
					}
				}
			}
		}
		out = append(out, obj)
	}
	return out, nil
}

// ValueOf returns a topology variable's value: the machine deployment's
// override when group names one, else the cluster-wide value.
func ValueOf(cluster *unstructured.Unstructured, group, name string) (any, bool) {
	if group != "" {
		mds, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "topology", "workers", "machineDeployments")
		for _, x := range mds {
			md, _ := x.(map[string]any)
			if md["name"] == group {
				over, _ := variables(md, "variables", "overrides")
				if v, ok := over[name]; ok {
					return v, true
				}
			}
		}
	}
	global, _ := variables(cluster.Object, "spec", "topology", "variables")
	v, ok := global[name]
	return v, ok
}

// enabled evaluates a patch's enabledIf template against the variables,
// as Cluster API does (without its builtin variables and template
// functions, which this package's patches do not use).
func enabled(enabledIf any, vars map[string]any) (bool, error) {
	src, _ := enabledIf.(string)
	if src == "" {
		return true, nil
	}
	tpl, err := template.New("enabledIf").Option("missingkey=error").Parse(src)
	if err != nil {
		return false, err
	}
	var b strings.Builder
	if err := tpl.Execute(&b, vars); err != nil {
		return false, err
	}
	return strings.TrimSpace(b.String()) == "true", nil
}

func variables(obj map[string]any, path ...string) (map[string]any, error) {
	list, _, err := unstructured.NestedSlice(obj, path...)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, x := range list {
		v, _ := x.(map[string]any)
		name, _ := v["name"].(string)
		out[name] = v["value"]
	}
	return out, nil
}

func applyOp(obj map[string]any, op map[string]any, vars map[string]any) error {
	kind, _ := op["op"].(string)
	path, _ := op["path"].(string)
	value, hasValue := op["value"]
	if vf, ok := op["valueFrom"].(map[string]any); ok {
		name, _ := vf["variable"].(string)
		v, ok := vars[name]
		if !ok {
			return fmt.Errorf("variable %q is not set", name)
		}
		value, hasValue = v, true
	}
	if !hasValue || (kind != "add" && kind != "replace") {
		return fmt.Errorf("unsupported patch %v", op)
	}
	value = deepCopyJSON(value)
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var cur any = obj
	for i, p := range parts {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if _, exists := c[p]; kind == "replace" && !exists {
					return fmt.Errorf("replace of missing %s", path)
				}
				c[p] = value
				return nil
			}
			next, ok := c[p]
			if !ok {
				return fmt.Errorf("path %s: %s does not exist", path, p)
			}
			cur = next
		case []any:
			if last && p == "-" {
				return fmt.Errorf("path %s: appending is not supported by the preview", path)
			}
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(c) {
				return fmt.Errorf("path %s: bad index %s", path, p)
			}
			if last {
				c[n] = value
				return nil
			}
			cur = c[n]
		default:
			return fmt.Errorf("path %s: %s is not an object", path, p)
		}
	}
	return nil
}

func deepCopyJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return normalizeNumbers(out)
}

// normalizeNumbers turns float64 integers back into int64, as
// unstructured objects hold them.
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalizeNumbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = normalizeNumbers(x)
		}
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	}
	return v
}
