package doctor_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/doctor"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// fakeNova answers the two reads the doctor makes of Nova: the version
// document at the endpoint root and the flavor list with extra specs
// (microversion 2.61 body, as in Nova's API reference). Nova cannot run on
// the test machine; Keystone, which holds its catalog entry, is real.
type fakeNova struct {
	mu      sync.Mutex
	flavors []map[string]any
}

func (n *fakeNova) setFlavors(fs ...map[string]any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.flavors = fs
}

func flavor(id, name string, specs map[string]string) map[string]any {
	return map[string]any{
		"id": id, "name": name, "ram": 65536, "vcpus": 16, "disk": 480, "swap": "",
		"OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false, "os-flavor-access:is_public": true,
		"rxtx_factor": 1.0, "description": nil, "extra_specs": specs,
		"links": []any{map[string]any{"rel": "self", "href": "http://nova/v2.1/flavors/" + id}},
	}
}

func (n *fakeNova) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("X-Auth-Token") == "" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/flavors/detail"):
		n.mu.Lock()
		defer n.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"flavors": n.flavors})
	case r.URL.Path == "/v2.1/" || r.URL.Path == "/v2.1":
		json.NewEncoder(w).Encode(map[string]any{"version": map[string]any{
			"id": "v2.1", "status": "CURRENT", "version": "2.96", "min_version": "2.1", "updated": "2013-07-23T11:33:21Z"}})
	default:
		http.NotFound(w, r)
	}
}

// versionDocument answers a service root the way Glance and Neutron do.
func versionDocument(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(body))
	})
}

func TestCloudChecksAgainstARealKeystone(t *testing.T) {
	ks := testkeystone.Start(t)
	ctx := context.Background()
	serviceUser := ks.ServiceUser("magnetite", "service-secret")

	nova := &fakeNova{}
	novaSrv := httptest.NewServer(nova)
	defer novaSrv.Close()
	glance := httptest.NewServer(versionDocument(`{"versions": [{"id": "v2.16", "status": "CURRENT"}]}`))
	defer glance.Close()
	neutron := httptest.NewServer(versionDocument(`{"versions": [{"id": "v2.0", "status": "CURRENT"}]}`))
	defer neutron.Close()
	ks.RegisterService("compute", "nova", novaSrv.URL+"/v2.1")
	ks.RegisterService("image", "glance", glance.URL)
	ks.RegisterService("network", "neutron", neutron.URL)
	// Octavia is in the catalog but down; Ironic is not in the catalog.
	ks.RegisterService("load-balancer", "octavia", "http://"+closedPort(t))

	hc := &http.Client{Timeout: 10 * time.Second}
	cloud := doctor.Cloud{AuthURL: ks.AuthURL(), Username: "magnetite", Password: "service-secret",
		ProjectName: "service", UserDomainName: "Default", ProjectDomainName: "Default", Region: testkeystone.Region}

	expect(t, doctor.KeystoneReachable(ctx, hc, cloud.AuthURL), doctor.Pass, cloud.AuthURL, "HTTP 200")

	wrong := cloud
	wrong.Password = "not-the-password"
	r, provider := doctor.ServiceCredentials(ctx, hc, wrong)
	expect(t, r, doctor.Fail, "refused", "magnetite", "password")
	if provider != nil {
		t.Fatal("refused credentials returned a provider")
	}

	r, provider = doctor.ServiceCredentials(ctx, hc, cloud)
	expect(t, r, doctor.Pass, "magnetite", "service")
	// With the service role alone, clusters' application credentials would
	// be left behind; with admin they can be deleted.
	expect(t, doctor.CredentialCleanup(provider, "magnetite"), doctor.Warn, "not admin", "openstack role add", "magnetite admin")
	ks.Grant(serviceUser, ks.ProjectID("service"), "admin")
	_, withAdmin := doctor.ServiceCredentials(ctx, hc, cloud)
	expect(t, doctor.CredentialCleanup(withAdmin, "magnetite"), doctor.Pass, "admin role")

	endpoints := results(doctor.ServiceEndpoints(ctx, hc, provider, cloud.Region))
	expect(t, endpoints["endpoint compute (Nova)"], doctor.Pass, novaSrv.URL)
	expect(t, endpoints["endpoint image (Glance)"], doctor.Pass, glance.URL)
	expect(t, endpoints["endpoint network (Neutron)"], doctor.Pass, neutron.URL)
	expect(t, endpoints["endpoint load-balancer (Octavia)"], doctor.Fail, "connection refused", "Octavia")
	expect(t, endpoints["endpoint baremetal (Ironic)"], doctor.Skip, "not in the catalog")

	// A real Ironic, registered in the catalog: found and answering once the
	// service user logs in again and gets the new catalog.
	ironic := testironic.StartIronic(t)
	ks.RegisterService("baremetal", "ironic", ironic.URL)
	_, provider = doctor.ServiceCredentials(ctx, hc, cloud)
	endpoints = results(doctor.ServiceEndpoints(ctx, hc, provider, cloud.Region))
	expect(t, endpoints["endpoint baremetal (Ironic)"], doctor.Pass, ironic.URL, "HTTP 200")
	// The same Ironic as the host inventory's standalone backend.
	expect(t, doctor.IronicEndpoint(ctx, hc, ironic.URL), doctor.Pass, ironic.URL)

	nova.setFlavors(flavor("1", "m1.large", map[string]string{"hw:cpu_policy": "dedicated"}))
	expect(t, doctor.BareMetalFlavors(ctx, provider, cloud.Region), doctor.Warn, "none of 1 flavors", "resources:CUSTOM_BAREMETAL=1")

	nova.setFlavors(
		flavor("1", "m1.large", map[string]string{}),
		flavor("2", "bm.gold", map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1", "resources:VCPU": "0"}),
		flavor("3", "bm.legacy", map[string]string{"baremetal": "true"}),
	)
	expect(t, doctor.BareMetalFlavors(ctx, provider, cloud.Region), doctor.Pass,
		"2 of 3 flavors", "bm.gold (resources:CUSTOM_BAREMETAL_GOLD=1)", "bm.legacy (baremetal=true)")

	// Keystone going away turns the reachability check to FAIL.
	ks.Stop()
	expect(t, doctor.KeystoneReachable(ctx, hc, cloud.AuthURL), doctor.Fail, cloud.AuthURL)
}
