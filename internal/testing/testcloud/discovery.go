package testcloud

import "net/http"

// novaMaxMicroversion is the newest compute microversion the stand-in
// claims: Nova 2023.1's (Horizon picks the microversions it uses from it).
const novaMaxMicroversion = "2.95"

// discoveryRoutes serve what clients read before they call a service:
// Nova's version documents (novaclient asks for them to choose a
// microversion), Neutron's, Octavia's and Glance's versions, and Glance's
// image schema (glanceclient validates the images it lists against it).
func (c *Cloud) discoveryRoutes(mux *http.ServeMux) {
	v21 := func() map[string]any {
		return map[string]any{
			"id": "v2.1", "status": "CURRENT", "version": novaMaxMicroversion, "min_version": "2.1",
			"updated": "2013-07-23T11:33:21Z",
			"links":   []any{map[string]any{"rel": "self", "href": c.URL + "/compute/v2.1/"}},
			"media-types": []any{map[string]any{"base": "application/json",
				"type": "application/vnd.openstack.compute+json;version=2.1"}},
		}
	}
	for _, path := range []string{"GET /compute/v2.1", "GET /compute/v2.1/{$}"} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"version": v21()})
		})
	}
	mux.HandleFunc("GET /compute/{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{v21()}})
	})
	// Neutron's and Octavia's roots list their API versions
	// (neutron/api/versions.py; octavia/api/root_controller.py), which
	// clients that discover versions from the catalog read.
	version := func(service, id, status string) map[string]any {
		return map[string]any{"id": id, "status": status, "updated": "2016-12-11T00:00:00Z",
			"links": []any{map[string]any{"rel": "self", "href": c.URL + "/" + service + "/" + id + "/"}}}
	}
	mux.HandleFunc("GET /networking/{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{version("networking", "v2.0", "CURRENT")}})
	})
	if !c.lacks(WithoutOctavia) {
		mux.HandleFunc("GET /load-balancer/{$}", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"versions": []any{version("load-balancer", "v2.0", "SUPPORTED"),
				version("load-balancer", "v2", "CURRENT")}})
		})
	}
	// Glance's root answers 300 Multiple Choices with its versions, each
	// linking to /v2/ (glance/api/versions.py, Glance 29.2.1: v2.17
	// CURRENT, v2.0 among the SUPPORTED), which clients that discover
	// versions from the catalog read.
	mux.HandleFunc("GET /image/{$}", func(w http.ResponseWriter, r *http.Request) {
		glance := func(id, status string) map[string]any {
			return map[string]any{"id": id, "status": status, "links": []any{map[string]any{"rel": "self", "href": c.URL + "/image/v2/"}}}
		}
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": []any{glance("v2.17", "CURRENT"), glance("v2.0", "SUPPORTED")}})
	})
	mux.HandleFunc("GET /image/v2/schemas/image", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, imageSchema())
	})
}

// imageSchema is Glance's image schema reduced to the properties the
// stand-in's images carry, with Glance's types (the additional properties
// an image may have are strings, as in Glance).
func imageSchema() map[string]any {
	str := map[string]any{"type": "string"}
	nullableStr := map[string]any{"type": []string{"null", "string"}}
	nullableInt := map[string]any{"type": []string{"null", "integer"}}
	return map[string]any{
		"name": "image",
		"properties": map[string]any{
			"id": str, "name": nullableStr, "status": str, "visibility": str, "owner": nullableStr,
			"protected": map[string]any{"type": "boolean"}, "os_hidden": map[string]any{"type": "boolean"},
			"container_format": nullableStr, "disk_format": nullableStr,
			"size": nullableInt, "virtual_size": nullableInt,
			"min_disk": map[string]any{"type": "integer"}, "min_ram": map[string]any{"type": "integer"},
			"checksum": nullableStr, "os_hash_algo": nullableStr, "os_hash_value": nullableStr,
			"tags":       map[string]any{"type": "array", "items": map[string]any{"type": "string", "maxLength": 255}},
			"created_at": str, "updated_at": str, "self": str, "file": str, "schema": str,
			"locations": map[string]any{"type": "array"}, "direct_url": str,
		},
		"additionalProperties": map[string]any{"type": "string"},
		"links": []any{
			map[string]any{"rel": "self", "href": "{self}"},
			map[string]any{"rel": "enclosure", "href": "{file}"},
			map[string]any{"rel": "describedby", "href": "{schema}"},
		},
	}
}
