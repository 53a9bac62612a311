package jsonpatch

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// A cluster template and a node group as the API patches them.
const (
	templateDoc = `{"uuid": "085e1c4d-4f68-4bfd-8462-74b9e14e4f39", "name": "k8s-bm2", "coe": "kubernetes",
		"image_id": "fedora-atomic-latest", "flavor_id": "m1.small", "master_flavor_id": null,
		"labels": {"kube_tag": "v1.30.4", "boot_volume_size": "20"}, "apiserver_port": null,
		"docker_volume_size": 3, "public": false, "hidden": false, "master_lb_enabled": true,
		"tags": null, "links": [{"href": "http://h/v1/clustertemplates/085e", "rel": "self"}]}`
	nodeGroupDoc = `{"name": "gpu", "node_count": 2, "min_node_count": 0, "max_node_count": null,
		"node_labels": {}, "node_taints": [{"key": "gpu", "effect": "NoSchedule"}], "labels": {"a": {"b": "c"}}}`
)

func decodeDoc(b []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, false
	}
	return doc, true
}

func FuzzParseApply(f *testing.F) {
	for _, seed := range []struct{ doc, patch string }{
		// Magnum's own update samples and what the CLIs send.
		{templateDoc, `[{"path": "/master_lb_enabled", "value": "True", "op": "replace"}, {"path": "/registry_enabled", "value": "True", "op": "replace"}]`},
		{templateDoc, `[{"path": "/node_count", "value": 2, "op": "replace"}]`},
		{templateDoc, `[{"op": "add", "path": "/labels/kube_tag", "value": "v1.31.0"}]`},
		{templateDoc, `[{"op": "remove", "path": "/labels/boot_volume_size"}]`},
		{templateDoc, `[{"op": "replace", "path": "/labels", "value": "{'kube_tag': 'v1.31.0'}"}]`},
		{templateDoc, `[{"op": "add", "path": "/apiserver_port", "value": 6443}, {"op": "remove", "path": "/tags"}]`},
		{templateDoc, `[{"op": "add", "path": "/name", "value": "x"}]`},
		{templateDoc, `[{"op": "add", "path": "/master_flavor_id/x", "value": "y"}]`},
		{templateDoc, `[{"op": "replace", "path": "/links/0", "value": {}}]`},
		{templateDoc, `[{"op": "move", "from": "/name", "path": "/tags"}]`},
		{templateDoc, `[{"op": "replace", "path": "name", "value": "x"}]`},
		{templateDoc, `[]`},
		{templateDoc, `null`},
		{templateDoc, `[null]`},
		{templateDoc, `{"op": "replace"}`},
		{templateDoc, `[{"op": "replace", "path": "/name", "value": "x"}] ]`},
		{nodeGroupDoc, `[{"op": "replace", "path": "/max_node_count", "value": 5}]`},
		{nodeGroupDoc, `[{"op": "add", "path": "/node_labels/gpu", "value": "a100"}]`},
		{nodeGroupDoc, `[{"op": "add", "path": "/labels/a/d", "value": {"e": [1, 2]}}, {"op": "remove", "path": "/labels/a/b"}]`},
		{nodeGroupDoc, `[{"op": "replace", "path": "/labels/a/b/c", "value": 1}]`},
		{`{}`, `[{"op": "add", "path": "/x", "value": 1}]`},
	} {
		f.Add([]byte(seed.doc), []byte(seed.patch))
	}
	f.Fuzz(func(t *testing.T, docJSON, patchJSON []byte) {
		ops, err := Parse(patchJSON)
		if err != nil {
			return
		}
		for _, o := range ops {
			if !pathRE.MatchString(o.Path) || (o.Op != "add" && o.Op != "replace" && o.Op != "remove") {
				t.Fatalf("Parse accepted %+v", o)
			}
		}
		doc, ok := decodeDoc(docJSON)
		if !ok {
			return
		}
		pristine, _ := decodeDoc(docJSON)
		out, err := Apply(doc, ops)
		if !reflect.DeepEqual(doc, pristine) {
			t.Fatalf("Apply (err %v) changed its input:\n%v\nwas\n%v", err, doc, pristine)
		}
		if err != nil {
			return
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("patched document does not encode: %v", err)
		}
		// Mutating the result must not reach back into the input either.
		for k := range out {
			delete(out, k)
		}
		if !reflect.DeepEqual(doc, pristine) {
			t.Fatalf("the patched document shares memory with its input")
		}
	})
}
