package testenv_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// Magnetite's own rule for [management] namespace_prefix (internal/mgmt).
var validPrefix = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,29}$`)

func TestNamespacePrefixIsATestsOwnAndOneMagnetiteAccepts(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 20 {
		p := testenv.NamespacePrefix(t)
		if !validPrefix.MatchString(p) || !strings.HasSuffix(p, "-") {
			t.Fatalf("prefix %q is not a namespace prefix Magnetite accepts", p)
		}
		if !strings.HasPrefix(p, "namespaceprefixisa") {
			t.Errorf("prefix %q does not name the test", p)
		}
		// A project namespace is the prefix and a 32-digit Keystone id.
		if len(p)+32 > 63 {
			t.Errorf("prefix %q leaves no room for a Keystone project id in a namespace name", p)
		}
		if seen[p] {
			t.Fatalf("prefix %q given twice", p)
		}
		seen[p] = true
	}
}

// TestSharedClusterAPIIsOnePlaneWithEveryManager: every caller in the
// binary gets the same plane, with the webhooks of the four managers
// registered, and each test a namespace of its own on it.
func TestSharedClusterAPIIsOnePlaneWithEveryManager(t *testing.T) {
	t.Parallel()
	a, b := testenv.SharedClusterAPI(t), testenv.SharedClusterAPI(t)
	if a != b {
		t.Fatal("two calls in one binary started two planes")
	}
	ctx := context.Background()
	hooks, err := a.Dynamic(t).Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}).
		List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	for _, h := range hooks.Items {
		for _, m := range testenv.AllManagers {
			if strings.HasPrefix(h.GetName(), m+"-") {
				managers[m] = true
			}
		}
	}
	for _, m := range testenv.AllManagers {
		if !managers[m] {
			t.Errorf("no validating webhooks of %s on the shared plane: %d configurations", m, len(hooks.Items))
		}
	}
	ns1, ns2 := a.ProjectNamespace(t), a.ProjectNamespace(t)
	if ns1 == ns2 {
		t.Fatalf("two project namespaces share the name %s", ns1)
	}
	for _, ns := range []string{ns1, ns2} {
		if _, err := a.Dynamic(t).Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
}
