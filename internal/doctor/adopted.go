package doctor

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// ClusterReader reads one object of the management cluster (*mgmt.Client).
type ClusterReader interface {
	Get(ctx context.Context, kind, namespace, name string) (*unstructured.Unstructured, error)
}

// AdoptedClusters checks, after a cut-over from Magnum, that every
// cluster Magnetite adopted from magnum-cluster-api or magnum-capi-helm
// still has its Cluster where the import found it, and that `magnetite
// serve` has taken it over (the Cluster carries Magnetite's labels):
// until then Magnetite shows it without its status and health.
func AdoptedClusters(ctx context.Context, clusters []*model.Cluster, r ClusterReader) Result {
	const check = "adopted clusters"
	var adopted, gone, waiting []string
	for _, c := range clusters {
		a := c.Adopted()
		if a == nil {
			continue
		}
		adopted = append(adopted, c.Name)
		where := fmt.Sprintf("%s (Cluster %s/%s of %s)", c.Name, a.Namespace, a.Name, a.Driver)
		obj, err := r.Get(ctx, "Cluster", a.Namespace, a.Name)
		switch {
		case apierrors.IsNotFound(err):
			gone = append(gone, where)
		case err != nil:
			return fail(check, "see the management cluster checks above", "read %s: %v", where, err)
		case obj.GetLabels()[mgmt.LabelClusterUUID] != c.UUID:
			waiting = append(waiting, where)
		}
	}
	switch {
	case len(adopted) == 0:
		return skip(check, "no cluster was adopted from a Magnum Cluster API driver")
	case len(gone) > 0:
		return fail(check, "restore the Cluster API objects from a backup of the management cluster, or delete the cluster in Magnetite, which then only removes its row",
			"%d of %d adopted clusters have no Cluster in the management cluster: %s", len(gone), len(adopted), strings.Join(gone, "; "))
	case len(waiting) > 0:
		return warn(check, "run `magnetite serve`, which takes them over; `magnetite cluster events <name>` says why one was not",
			"%d of %d adopted clusters are not taken over yet: %s", len(waiting), len(adopted), strings.Join(waiting, "; "))
	}
	return pass(check, "%d adopted clusters taken over: %s", len(adopted), strings.Join(adopted, ", "))
}
