package conductor

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/addons/charts"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/mgmt"
)

// AddonCharts renders an addon release from its pinned charts
// (*charts.Source).
type AddonCharts interface {
	Render(ctx context.Context, rel addons.Release) ([]string, error)
	String() string
}

// renderAddons turns the cluster's addon releases into the documents its
// ConfigMaps carry: the operator's own magnetite-addon-<name>-<version>
// ConfigMap in the namespace when there is one, the rendered charts
// otherwise. A chart the source does not hold fails the operation for good,
// with where it was looked for; a source that does not answer is retried.
func (c *Conductor) renderAddons(ctx context.Context, sc *scope, rels []addons.Release) ([]driver.RenderedAddon, error) {
	var out []driver.RenderedAddon
	for _, rel := range rels {
		override, err := c.operatorAddon(ctx, sc.namespace, rel)
		if err != nil {
			return nil, err
		}
		if override != "" {
			out = append(out, driver.RenderedAddon{Addon: rel.Addon, Override: override})
			continue
		}
		if c.opts.Addons == nil {
			return nil, permanentf("addons: the conductor has no chart source for addon %s; set [addons] source", rel.Addon)
		}
		cc := c.opts.Credentials
		docs, err := c.opts.Addons.Render(ctx, rel.WithKeystone(cc.AuthURL, cc.CACert))
		switch {
		case errors.Is(err, charts.ErrNotFound) || errors.Is(err, charts.ErrDigest):
			return nil, permanentf("addons: %s %s cannot be installed: %v. Mirror the pinned charts (magnetite addons mirror DIR) into the source ([addons] source = %s), or put your own ConfigMap %s into namespace %s",
				rel.Addon, rel.Version(), err, c.opts.Addons, rel.OverrideName(), sc.namespace)
		case errors.Is(err, charts.ErrRender):
			return nil, permanentf("addons: %v", err)
		case err != nil:
			return nil, fmt.Errorf("addons: %s %s: %w", rel.Addon, rel.Version(), err)
		}
		out = append(out, driver.RenderedAddon{Addon: rel.Addon, Docs: docs})
	}
	return out, nil
}

// operatorAddon names the operator's own ConfigMap for a release, if the
// namespace holds one that Magnetite did not write.
func (c *Conductor) operatorAddon(ctx context.Context, namespace string, rel addons.Release) (string, error) {
	cm, err := c.mc.Get(ctx, "ConfigMap", namespace, rel.OverrideName())
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("addons: read ConfigMap %s/%s: %w", namespace, rel.OverrideName(), err)
	case cm.GetLabels()[mgmt.LabelManagedBy] == mgmt.ManagedByValue:
		return "", nil
	}
	return cm.GetName(), nil
}

// conditionResourcesApplied is the ClusterResourceSet's condition.
const conditionResourcesApplied = "ResourcesApplied"

// addonsHealth is the health_status_reason entry of the cluster's addons,
// read from its ClusterResourceSet (nil when it has none).
func addonsHealth(crs map[string]any, controlPlaneInitialized bool) (string, bool) {
	if crs == nil {
		return "", false
	}
	c, ok := findCondition(crs, conditionResourcesApplied)
	switch {
	case ok && c.Status == "False":
		return "failed: " + c.String(), true
	case !controlPlaneInitialized:
		// Cluster API applies them once the control plane answers.
		return "waiting for the control plane", true
	case ok && c.Status == "True":
		return "applied", true
	}
	return "pending", true
}
