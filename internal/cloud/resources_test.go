package cloud_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// catalog lists endpoints by service type, as Keystone's catalog does.
type catalog map[string]string

func (c catalog) Endpoint(_ context.Context, serviceType, _ string) (string, error) {
	if ep, ok := c[serviceType]; ok {
		return ep, nil
	}
	return "", fault.New(auth.ErrNoEndpoint, "no public endpoint of type %s", serviceType)
}

const token = "caller-token"

// openstack answers the reads of Glance, Nova and Neutron with the bodies
// of their API references (fields the checks do not read left out), and
// refuses requests without the caller's token.
func openstack(t *testing.T) *httptest.Server {
	t.Helper()
	write := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	image := func(id, name, distro string) map[string]any {
		m := map[string]any{"id": id, "name": name, "status": "active", "visibility": "public",
			"container_format": "bare", "disk_format": "qcow2", "min_disk": 0, "min_ram": 0, "protected": false,
			"tags": []string{}, "created_at": "2024-05-02T10:00:00Z", "updated_at": "2024-05-02T10:00:05Z",
			"self": "/v2/images/" + id, "file": "/v2/images/" + id + "/file", "schema": "/v2/schemas/image"}
		if distro != "" {
			m["os_distro"] = distro
		}
		return m
	}
	imgs := []map[string]any{
		image("7b4b2f55-0000-4000-8000-000000000001", "ubuntu-2204-kube-v1.30.4", "ubuntu"),
		image("7b4b2f55-0000-4000-8000-000000000002", "twin", "flatcar"),
		image("7b4b2f55-0000-4000-8000-000000000003", "twin", "flatcar"),
	}
	flavors := []map[string]any{
		{"id": "1", "name": "m1.small", "vcpus": 1, "ram": 2048, "disk": 20, "links": []any{}},
		{"id": "b1", "name": "bm.large", "vcpus": 32, "ram": 131072, "disk": 480, "links": []any{}},
	}
	nets := []map[string]any{
		{"id": "aa000000-0000-4000-8000-000000000001", "name": "public", "router:external": true, "status": "ACTIVE"},
		{"id": "aa000000-0000-4000-8000-000000000002", "name": "private", "router:external": false, "status": "ACTIVE"},
		{"id": "aa000000-0000-4000-8000-000000000003", "name": "private", "router:external": false, "status": "ACTIVE"},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /image/v2/images/{id}", func(w http.ResponseWriter, r *http.Request) {
		for _, i := range imgs {
			if i["id"] == r.PathValue("id") {
				write(w, 200, i)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
	})
	mux.HandleFunc("GET /image/v2/images", func(w http.ResponseWriter, r *http.Request) {
		out := []any{}
		for _, i := range imgs {
			if i["name"] == r.URL.Query().Get("name") {
				out = append(out, i)
			}
		}
		write(w, 200, map[string]any{"images": out, "first": "/v2/images", "schema": "/v2/schemas/images"})
	})
	mux.HandleFunc("GET /compute/v2.1/flavors/{id}", func(w http.ResponseWriter, r *http.Request) {
		for _, f := range flavors {
			if f["id"] == r.PathValue("id") {
				write(w, 200, map[string]any{"flavor": f})
				return
			}
		}
		write(w, 404, map[string]any{"itemNotFound": map[string]any{"code": 404, "message": "Flavor could not be found."}})
	})
	mux.HandleFunc("GET /compute/v2.1/flavors/detail", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, map[string]any{"flavors": flavors})
	})
	mux.HandleFunc("GET /compute/v2.1/os-keypairs/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "mine" {
			write(w, 404, map[string]any{"itemNotFound": map[string]any{"code": 404, "message": "Keypair not found"}})
			return
		}
		write(w, 200, map[string]any{"keypair": map[string]any{"name": "mine", "public_key": "ssh-ed25519 AAAA", "fingerprint": "aa:bb",
			"user_id": "u", "deleted": false, "created_at": "2024-05-02T10:00:00.000000", "updated_at": nil, "deleted_at": nil, "id": 1}})
	})
	mux.HandleFunc("GET /networking/v2.0/networks", func(w http.ResponseWriter, r *http.Request) {
		out := []any{}
		for _, n := range nets {
			if ext := r.URL.Query().Get("router:external"); ext == "" || ext == fmt.Sprint(n["router:external"]) {
				out = append(out, n)
			}
		}
		write(w, 200, map[string]any{"networks": out})
	})
	mux.HandleFunc("GET /networking/v2.0/subnets", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, map[string]any{"subnets": []any{map[string]any{"id": "5b000000-0000-4000-8000-000000000001", "name": "private-subnet",
			"network_id": "aa000000-0000-4000-8000-000000000002", "cidr": "10.0.0.0/24", "ip_version": 4}}})
	})
	// A server Nova put in ERROR, with the fault Nova shows its project
	// (compute API reference, "Show Server Details").
	mux.HandleFunc("GET /compute/v2.1/servers/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "9168b536-cd40-4630-b43f-b259807c6e87" {
			write(w, 404, map[string]any{"itemNotFound": map[string]any{"code": 404, "message": "Instance could not be found."}})
			return
		}
		write(w, 200, map[string]any{"server": map[string]any{"id": r.PathValue("id"), "name": "demo-cp-x", "status": "ERROR",
			"tenant_id": "p", "user_id": "u", "created": "2024-05-02T10:00:00Z", "updated": "2024-05-02T10:00:05Z",
			"fault": map[string]any{"code": 500, "created": "2024-05-02T10:00:04Z",
				"message": "No valid host was found. There are not enough hosts available."}}})
	})
	mux.HandleFunc("GET /compute/v2.1/os-server-groups/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "5bbcc3c4-1da2-4437-a48a-66f15b1b13f9" {
			write(w, 404, map[string]any{"itemNotFound": map[string]any{"code": 404, "message": "Instance group " + r.PathValue("id") + " could not be found."}})
			return
		}
		write(w, 200, map[string]any{"server_group": map[string]any{"id": r.PathValue("id"), "name": "demo-default-master",
			"policy": "soft-anti-affinity", "members": []any{}, "rules": map[string]any{}}})
	})
	mux.HandleFunc("GET /volume/v3/types", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, map[string]any{"volume_types": []any{map[string]any{"id": "6685584b-1eac-4da6-b5c3-555430cf68ff",
			"name": "__DEFAULT__", "is_public": true, "extra_specs": map[string]any{}}}})
	})
	mux.HandleFunc("GET /volume/v3/os-availability-zone", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, map[string]any{"availabilityZoneInfo": []any{
			map[string]any{"zoneName": "nova", "zoneState": map[string]any{"available": true}},
			map[string]any{"zoneName": "az-down", "zoneState": map[string]any{"available": false}}}})
	})
	// A Neutron without routers (its L3 extension not loaded), a Nova of
	// one zone.
	mux.HandleFunc("GET /networking/v2.0/extensions", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, map[string]any{"extensions": []any{map[string]any{"alias": "external-net", "name": "Neutron external network",
			"description": "Adds external network attribute to network resource.", "updated": "2013-01-14T10:00:00-00:00", "links": []any{}}}})
	})
	mux.HandleFunc("GET /compute/v2.1/os-availability-zone", func(w http.ResponseWriter, r *http.Request) {
		write(w, 200, map[string]any{"availabilityZoneInfo": []any{map[string]any{"zoneName": "nova", "zoneState": map[string]any{"available": true}, "hosts": nil}}})
	})
	mux.HandleFunc("/broken/", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Auth-Token") != token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestResourcesAreCheckedAsMagnumChecksThem(t *testing.T) {
	srv := openstack(t)
	full := catalog{"image": srv.URL + "/image", "compute": srv.URL + "/compute/v2.1", "network": srv.URL + "/networking"}
	cases := []struct {
		name    string
		catalog catalog
		refs    cloud.Refs
		distro  string
		err     error
		msg     string
	}{
		{name: "image by name gives its os_distro", refs: cloud.Refs{Image: "ubuntu-2204-kube-v1.30.4"}, distro: "ubuntu"},
		{name: "image by ID", refs: cloud.Refs{Image: "7b4b2f55-0000-4000-8000-000000000002"}, distro: "flatcar"},
		{name: "missing image", refs: cloud.Refs{Image: "no-such-image"}, err: cloud.ErrInvalid, msg: "Image no-such-image could not be found."},
		{name: "image name shared by two images", refs: cloud.Refs{Image: "twin"}, err: cloud.ErrInvalid, msg: "use the image ID"},
		{name: "flavors by ID and name", refs: cloud.Refs{Flavors: []string{"1", "bm.large", ""}}},
		{name: "missing flavor", refs: cloud.Refs{Flavors: []string{"m1.small", "aaa"}}, err: cloud.ErrInvalid, msg: "Unable to find flavor aaa."},
		{name: "keypair", refs: cloud.Refs{Keypair: "mine"}},
		{name: "missing keypair", refs: cloud.Refs{Keypair: "theirs"}, err: cloud.ErrInvalid, msg: "Unable to find keypair theirs."},
		{name: "external network by name", refs: cloud.Refs{ExternalNetwork: "public"}},
		{name: "a private network is no external network", refs: cloud.Refs{ExternalNetwork: "aa000000-0000-4000-8000-000000000002"},
			err: cloud.ErrInvalid, msg: "Unable to find external network"},
		{name: "fixed network by ID", refs: cloud.Refs{FixedNetwork: "aa000000-0000-4000-8000-000000000002"}},
		{name: "fixed network name shared", refs: cloud.Refs{FixedNetwork: "private"}, err: cloud.ErrInvalid, msg: "use the network ID"},
		{name: "fixed subnet", refs: cloud.Refs{FixedSubnet: "private-subnet"}},
		{name: "missing fixed subnet", refs: cloud.Refs{FixedSubnet: "nope"}, err: cloud.ErrInvalid, msg: "Unable to find fixed subnet nope."},
		{name: "services the catalog does not list are not asked", catalog: catalog{},
			refs: cloud.Refs{Image: "no-such-image", Flavors: []string{"aaa"}, ExternalNetwork: "x", Keypair: "theirs"}},
		{name: "a failing service is unavailable, not a bad request", catalog: catalog{"compute": srv.URL + "/broken"},
			refs: cloud.Refs{Flavors: []string{"m1.small"}}, err: cloud.ErrUnavailable, msg: "answered 500"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cat := tc.catalog
			if cat == nil {
				cat = full
			}
			rs := &cloud.Resources{Catalog: cat}
			found, err := rs.Check(context.Background(), token, tc.refs)
			if tc.err == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
			} else if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %v with %q", err, tc.err, tc.msg)
			}
			if found.OSDistro != tc.distro {
				t.Errorf("os_distro %q, want %q", found.OSDistro, tc.distro)
			}
		})
	}
}

// TestRefusalMessageFindsTheServicesWords: the message inside the body a
// refused request's error text quotes, in each service's envelope.
func TestRefusalMessageFindsTheServicesWords(t *testing.T) {
	cases := map[string]string{
		`Expected HTTP response code [202] when accessing [POST http://nova/v2.1/servers], but got 400 instead: {"badRequest": {"code": 400, "message": "Invalid key_name provided."}}`:                                       "Invalid key_name provided.",
		`create port: Bad request with: [POST http://neutron/v2.0/ports], error message: {"NeutronError": {"type": "PortSecurityAndIPRequiredForSecurityGroups", "message": "Port security must be enabled.", "detail": ""}}`: "PortSecurityAndIPRequiredForSecurityGroups: Port security must be enabled.",
		`  context deadline exceeded  `: "context deadline exceeded",
		`unexpected {brace} then {"itemNotFound": {"message": "Volume type with name fast could not be found."}}`: "Volume type with name fast could not be found.",
	}
	for in, want := range cases {
		if got := cloud.RefusalMessage(in); got != want {
			t.Errorf("RefusalMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFailedServersAreExplainedAndTheirCauseLookedFor: Nova's fault of a
// server in ERROR, and which of what a server asks for the project cannot
// use, as the cluster's token sees them.
func TestFailedServersAreExplainedAndTheirCauseLookedFor(t *testing.T) {
	srv := openstack(t)
	rs := &cloud.Resources{Catalog: catalog{"image": srv.URL + "/image", "compute": srv.URL + "/compute/v2.1",
		"block-storage": srv.URL + "/volume/v3"}}
	ctx := context.Background()
	msg, err := rs.ServerFault(ctx, token, "9168b536-cd40-4630-b43f-b259807c6e87")
	if err != nil || msg != "No valid host was found. There are not enough hosts available." {
		t.Errorf("fault %q, %v", msg, err)
	}
	if msg, err := rs.ServerFault(ctx, token, "0000"); err != nil || msg != "" {
		t.Errorf("a server that is gone: fault %q, %v", msg, err)
	}

	cases := []struct {
		refs    cloud.ServerRefs
		missing string
	}{
		{cloud.ServerRefs{Flavor: "m1.small", Image: "ubuntu-2204-kube-v1.30.4", ServerGroup: "5bbcc3c4-1da2-4437-a48a-66f15b1b13f9",
			Keypair: "mine", VolumeType: "__DEFAULT__", VolumeZone: "nova"}, ""},
		{cloud.ServerRefs{Flavor: "3", Image: "gone", ServerGroup: "5bbcc3c4-0000-4437-a48a-66f15b1b13f9", Keypair: "alice-key",
			VolumeType: "fast", VolumeZone: "az-down"},
			"image gone, flavor 3, server group 5bbcc3c4-0000-4437-a48a-66f15b1b13f9, keypair alice-key, volume type fast, volume availability zone az-down"},
	}
	for _, tc := range cases {
		missing, err := rs.MissingServerRefs(ctx, token, tc.refs)
		if err != nil || strings.Join(missing, ", ") != tc.missing {
			t.Errorf("MissingServerRefs(%+v) = %q, %v; want %q", tc.refs, missing, err, tc.missing)
		}
	}
	broken := &cloud.Resources{Catalog: catalog{"block-storage": srv.URL + "/broken"}}
	if _, err := broken.MissingServerRefs(ctx, token, cloud.ServerRefs{VolumeType: "fast"}); !errors.Is(err, cloud.ErrUnavailable) {
		t.Errorf("Cinder answering 500: %v, want ErrUnavailable (the cause cannot be told)", err)
	}
}
