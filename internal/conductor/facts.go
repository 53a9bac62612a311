package conductor

import (
	"context"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/model"
)

// FactsSource reads what the cloud says about the resources a cluster uses.
// The conductor asks once per operation and hands the result to the driver.
type FactsSource interface {
	Facts(ctx context.Context, ct *model.ClusterTemplate, c *model.Cluster, ngs []*model.NodeGroup) (*driver.Facts, error)
}

// NoCloud is the facts source of infrastructures that need no cloud (the
// in-memory one): there is nothing to read.
type NoCloud struct{}

// Facts returns empty facts.
func (NoCloud) Facts(context.Context, *model.ClusterTemplate, *model.Cluster, []*model.NodeGroup) (*driver.Facts, error) {
	return &driver.Facts{}, nil
}
