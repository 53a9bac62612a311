package api_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/fault"
)

// cloudAnswers stands in for cloud.Resources: it records what the API asks
// and answers from a list of missing resources.
type cloudAnswers struct {
	mu      sync.Mutex
	asked   []cloud.Refs
	missing map[string]bool
	down    bool
	distro  map[string]string       // image -> os_distro
	flavors map[string]facts.Flavor // by name, with their extra specs
}

func (c *cloudAnswers) Check(_ context.Context, _ string, refs cloud.Refs) (cloud.Found, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, refs)
	if c.down {
		return cloud.Found{}, fault.New(cloud.ErrUnavailable, "could not list flavors: Nova answered 500")
	}
	for _, ref := range append([]string{refs.Image, refs.ExternalNetwork, refs.FixedNetwork, refs.FixedSubnet, refs.Keypair}, refs.Flavors...) {
		if c.missing[ref] {
			return cloud.Found{}, fault.New(cloud.ErrInvalid, "Unable to find %s.", ref)
		}
	}
	found := cloud.Found{OSDistro: c.distro[refs.Image]}
	for _, ref := range refs.Flavors {
		if f, ok := c.flavors[ref]; ok {
			found.Facts.Flavors = append(found.Facts.Flavors, f)
		}
	}
	return found, nil
}

func (c *cloudAnswers) last(t *testing.T) cloud.Refs {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asked) == 0 {
		t.Fatal("the cloud was not asked")
	}
	return c.asked[len(c.asked)-1]
}

func (c *cloudAnswers) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.asked)
}

func TestTemplatesAndClustersNameResourcesTheCloudHas(t *testing.T) {
	answers := &cloudAnswers{
		missing: map[string]bool{"no-such-image": true, "no-such-flavor": true, "no-such-keypair": true},
		distro:  map[string]string{"plain-image": "flatcar"},
	}
	srv := startWithDrivers(t, func(o *api.Options) { o.Resources = answers })
	template := map[string]any{
		"name": "k8s", "coe": "kubernetes", "image_id": "ubuntu-2204-kube-v1.31.2", "flavor_id": "m1.small",
		"master_flavor_id": "m1.medium", "external_network_id": "public", "fixed_network": "private", "keypair_id": "mine",
		"labels": map[string]string{"kube_tag": "v1.31.2"},
	}
	with := func(changes map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range template {
			out[k] = v
		}
		for k, v := range changes {
			out[k] = v
		}
		return out
	}

	status, body := call(t, srv, "POST", "/v1/clustertemplates", template)
	if status != http.StatusCreated {
		t.Fatalf("create template: %d %v", status, body)
	}
	want := cloud.Refs{Image: "ubuntu-2204-kube-v1.31.2", Flavors: []string{"m1.small", "m1.medium"}, ExternalNetwork: "public", FixedNetwork: "private"}
	if got := answers.last(t); !reflect.DeepEqual(got, want) {
		t.Errorf("a template create asked about %+v, want %+v", got, want)
	}

	for _, tc := range []struct{ field, value string }{{"image_id", "no-such-image"}, {"flavor_id", "no-such-flavor"}, {"master_flavor_id", "no-such-flavor"}} {
		status, body := call(t, srv, "POST", "/v1/clustertemplates", with(map[string]any{"name": "bad-" + tc.field, tc.field: tc.value}))
		if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body), "Unable to find "+tc.value) {
			t.Errorf("a template whose %s does not exist: %d %v, want 400 naming it", tc.field, status, body)
		}
	}
	if status, _ := call(t, srv, "GET", "/v1/clustertemplates/bad-image_id", nil); status != http.StatusNotFound {
		t.Errorf("a refused template was stored: GET answered %d", status)
	}

	t.Run("the image's os_distro from Glance decides the driver", func(t *testing.T) {
		status, body := call(t, srv, "POST", "/v1/clustertemplates", with(map[string]any{"name": "plain", "image_id": "plain-image"}))
		if status != http.StatusCreated || body["cluster_distro"] != "flatcar" {
			t.Fatalf("create from an image named without its distro: %d cluster_distro=%v, want 201 flatcar", status, body["cluster_distro"])
		}
	})

	t.Run("an update asks only about the fields it changes", func(t *testing.T) {
		before := answers.count()
		rename := []map[string]any{{"op": "replace", "path": "/name", "value": "k8s-renamed"}}
		if status, body := call(t, srv, "PATCH", "/v1/clustertemplates/k8s", rename); status != http.StatusOK {
			t.Fatalf("rename: %d %v", status, body)
		}
		if answers.count() != before {
			t.Errorf("a rename asked the cloud: %+v", answers.last(t))
		}
		reflavor := []map[string]any{{"op": "replace", "path": "/flavor_id", "value": "no-such-flavor"}}
		if status, _ := call(t, srv, "PATCH", "/v1/clustertemplates/k8s-renamed", reflavor); status != http.StatusBadRequest {
			t.Errorf("a PATCH to a missing flavor: %d, want 400", status)
		}
		if got, want := answers.last(t), (cloud.Refs{Flavors: []string{"no-such-flavor", ""}}); !reflect.DeepEqual(got, want) {
			t.Errorf("the flavor PATCH asked about %+v, want %+v", got, want)
		}
	})

	t.Run("a cluster's own flavors and keypair, and the template's image and network", func(t *testing.T) {
		status, body := call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "c1", "cluster_template_id": "k8s-renamed", "flavor_id": "m1.large"})
		if status != http.StatusAccepted {
			t.Fatalf("create cluster: %d %v", status, body)
		}
		want := cloud.Refs{Image: "ubuntu-2204-kube-v1.31.2", Flavors: []string{"m1.large", "m1.medium"}, ExternalNetwork: "public", FixedNetwork: "private", Keypair: "mine"}
		if got := answers.last(t); !reflect.DeepEqual(got, want) {
			t.Errorf("a cluster create asked about %+v, want %+v", got, want)
		}
		for _, tc := range []struct{ field, value string }{{"keypair", "no-such-keypair"}, {"flavor_id", "no-such-flavor"}, {"master_flavor_id", "no-such-flavor"}} {
			status, body := call(t, srv, "POST", "/v1/clusters", map[string]any{"name": "c-" + tc.field, "cluster_template_id": "k8s-renamed", tc.field: tc.value})
			if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body), "Unable to find "+tc.value) {
				t.Errorf("a cluster whose %s does not exist: %d %v, want 400 naming it", tc.field, status, body)
			}
		}
	})

	t.Run("a cloud that cannot be asked is a 503", func(t *testing.T) {
		answers.mu.Lock()
		answers.down = true
		answers.mu.Unlock()
		status, body := call(t, srv, "POST", "/v1/clustertemplates", with(map[string]any{"name": "while-down"}))
		if status != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(body), "Nova answered 500") {
			t.Errorf("create while Nova fails: %d %v, want 503 saying why", status, body)
		}
	})
}
