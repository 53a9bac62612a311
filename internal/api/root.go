package api

import (
	"net/http"
)

const apiDescription = "Magnetite serves the OpenStack Magnum v1 API and builds every cluster with Cluster API."

// versions is the version list of GET /.
func versions(base string) []map[string]any {
	return []map[string]any{{
		"id":          "v1",
		"status":      "CURRENT",
		"min_version": MinVersion.String(),
		"max_version": MaxVersion.String(),
		"links":       []Link{{Href: base + "/v1/", Rel: "self"}},
	}}
}

func (s *Server) rootVersions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"name":        "OpenStack Magnum API",
		"description": apiDescription,
		"versions":    versions(baseURL(r)),
	})
}

func (s *Server) v1Root(w http.ResponseWriter, r *http.Request) error {
	base := baseURL(r)
	coll := func(name string) []Link {
		return []Link{{Href: base + "/v1/" + name + "/", Rel: "self"}, {Href: base + "/" + name + "/", Rel: "bookmark"}}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "v1",
		"media_types": []map[string]string{{
			"base": "application/json", "type": "application/vnd.openstack.magnum.v1+json",
		}},
		"links": []Link{
			{Href: base + "/v1/", Rel: "self"},
			{Href: "https://docs.openstack.org/magnum/latest/user/", Rel: "describedby", Type: "text/html"},
		},
		"clustertemplates": coll("clustertemplates"),
		"clusters":         coll("clusters"),
		"quotas":           coll("quotas"),
		"certificates":     coll("certificates"),
		"mservices":        coll("mservices"),
		"stats":            coll("stats"),
		"federations":      coll("federations"),
		"nodegroups":       coll("nodegroups"),
		// Not in Magnum's v1 document, but gophercloud's apiversions.Get
		// reads the version (and its microversion range) from here.
		"versions": versions(base),
	})
	return nil
}
