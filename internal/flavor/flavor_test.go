package flavor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/magnetite-io/magnetite/internal/flavor"
)

// nova serves Nova's flavor reads as its API reference describes them: the
// extra specs come with a flavor from microversion 2.61, a microversion
// above the server's maximum is refused with 406, and without
// is_public=None only public flavors are listed.
type nova struct {
	maxMinor int
	mu       sync.Mutex
	requests []string
}

type novaFlavor struct {
	id, name string
	public   bool
	specs    map[string]string
}

var novaFlavors = []novaFlavor{
	{id: "1", name: "m1.small", public: true, specs: map[string]string{}},
	{id: "7", name: "bm.gold", public: false, specs: map[string]string{"resources:CUSTOM_BAREMETAL_GOLD": "1"}},
}

func (n *nova) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	n.requests = append(n.requests, r.Method+" "+r.URL.RequestURI())
	n.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	minor := 1
	if v := r.Header.Get("X-OpenStack-Nova-API-Version"); v != "" {
		minor, _ = strconv.Atoi(strings.TrimPrefix(v, "2."))
	}
	if minor > n.maxMinor {
		w.WriteHeader(http.StatusNotAcceptable)
		fmt.Fprintf(w, `{"computeFault": {"code": 406, "message": "Version 2.%d is not supported by the API. Minimum is 2.1 and maximum is 2.%d."}}`, minor, n.maxMinor)
		return
	}
	body := func(f novaFlavor) map[string]any {
		m := map[string]any{"id": f.id, "name": f.name, "vcpus": 2, "ram": 4096, "disk": 40, "os-flavor-access:is_public": f.public}
		if minor >= 61 {
			m["extra_specs"] = f.specs
		}
		return m
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 2 && parts[1] == "detail":
		list := []any{}
		for _, f := range novaFlavors {
			if f.public || r.URL.Query().Get("is_public") == "None" {
				list = append(list, body(f))
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"flavors": list})
		return
	case len(parts) >= 2:
		for _, f := range novaFlavors {
			if f.id != parts[1] {
				continue
			}
			if len(parts) == 3 && parts[2] == "os-extra_specs" {
				_ = json.NewEncoder(w).Encode(map[string]any{"extra_specs": f.specs})
			} else {
				_ = json.NewEncoder(w).Encode(map[string]any{"flavor": body(f)})
			}
			return
		}
	}
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `{"itemNotFound": {"code": 404, "message": "Flavor %s could not be found."}}`, parts[len(parts)-1])
}

func (n *nova) count(prefix string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, r := range n.requests {
		if strings.HasPrefix(r, prefix) {
			c++
		}
	}
	return c
}

func client(t *testing.T, n *nova) *gophercloud.ServiceClient {
	srv := httptest.NewServer(n)
	t.Cleanup(srv.Close)
	return &gophercloud.ServiceClient{ProviderClient: &gophercloud.ProviderClient{HTTPClient: *srv.Client()}, Endpoint: srv.URL + "/", Type: "compute"}
}

func TestFindReadsAFlavorWithItsExtraSpecs(t *testing.T) {
	ctx := context.Background()
	for _, maxMinor := range []int{95, 60} {
		t.Run(fmt.Sprintf("nova up to 2.%d", maxMinor), func(t *testing.T) {
			n := &nova{maxMinor: maxMinor}
			sc := client(t, n)
			// By ID, and by the name of a private flavor.
			for _, ref := range []string{"7", "bm.gold"} {
				f, err := flavor.Find(ctx, sc, ref)
				if err != nil || f.ID != "7" || f.ExtraSpecs["resources:CUSTOM_BAREMETAL_GOLD"] != "1" {
					t.Fatalf("Find(%s) = %+v, %v", ref, f, err)
				}
				if spec, ok := f.BareMetal(); !ok || spec != "resources:CUSTOM_BAREMETAL_GOLD=1" {
					t.Errorf("Find(%s) is not bare metal: %q", ref, spec)
				}
			}
			if _, err := flavor.Find(ctx, sc, "m1.huge"); !errors.Is(err, flavor.ErrNotFound) {
				t.Errorf("Find of a missing flavor: %v, want ErrNotFound", err)
			}
			all, err := flavor.List(ctx, sc)
			if err != nil || len(all) != 2 || all[1].ExtraSpecs["resources:CUSTOM_BAREMETAL_GOLD"] != "1" || all[0].ExtraSpecs == nil {
				t.Fatalf("List = %+v, %v", all, err)
			}
			// A Nova that has 2.61 sends the extra specs inline: no
			// os-extra_specs reads. An older one is asked per flavor.
			if reads := n.count("GET /flavors/7/os-extra_specs") + n.count("GET /flavors/1/os-extra_specs"); (maxMinor >= 61) != (reads == 0) {
				t.Errorf("%d os-extra_specs reads from a Nova up to 2.%d", reads, maxMinor)
			}
		})
	}
}

func TestFindSaysWhatFailed(t *testing.T) {
	sc := &gophercloud.ServiceClient{ProviderClient: &gophercloud.ProviderClient{}, Endpoint: "http://127.0.0.1:1/"}
	_, err := flavor.Find(context.Background(), sc, "m1.small")
	if err == nil || errors.Is(err, flavor.ErrNotFound) || !strings.Contains(err.Error(), "read flavor m1.small") {
		t.Fatalf("Find against a Nova that does not answer: %v", err)
	}
}
