package kinds

import (
	"slices"
	"strings"
	"testing"
)

// TestTableMergesDeclarations: two infrastructures may need the same kind
// (Metal3's drivers and the host inventory both use BareMetalHost); the
// table keeps one entry with the union of what each asked for, and refuses
// a kind declared in two API groups.
func TestTableMergesDeclarations(t *testing.T) {
	table, err := NewTable(
		[]Kind{{Kind: "Secret", Group: GroupCore, Cleanup: true}, {Kind: "Cluster", Group: GroupCluster, Watched: true}},
		[]Kind{{Kind: "BareMetalHost", Group: GroupMetal3}, {Kind: "IPPool", Group: GroupMetal3IPAM, Cleanup: true}},
		[]Kind{{Kind: "BareMetalHost", Group: GroupMetal3, Watched: true}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := table.Names(); !slices.Equal(got, []string{"BareMetalHost", "Cluster", "IPPool", "Secret"}) {
		t.Errorf("names %v", got)
	}
	if got := table.Watched(); !slices.Equal(got, []string{"BareMetalHost", "Cluster"}) {
		t.Errorf("watched %v", got)
	}
	if got := table.Cleanup(); !slices.Equal(got, []string{"IPPool", "Secret"}) {
		t.Errorf("cleanup %v", got)
	}
	_, err = NewTable([]Kind{{Kind: "IPPool", Group: GroupMetal3IPAM}}, []Kind{{Kind: "IPPool", Group: GroupInfrastructure}})
	if err == nil || !strings.Contains(err.Error(), `IPPool is listed in API group "ipam.metal3.io" and in "infrastructure.cluster.x-k8s.io"`) {
		t.Errorf("a kind in two groups: %v", err)
	}
}
