package mgmt

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Scale sets the replicas of a scalable object (a MachineDeployment) through
// its scale subresource, as the cluster autoscaler does, so that only
// spec.replicas changes hands and nothing else of the object is touched.
func (c *Client) Scale(ctx context.Context, kind, namespace, name string, replicas int) error {
	r, err := c.Resource(ctx, kind)
	if err != nil {
		return err
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	_, err = c.resourceClient(r, namespace).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, "scale")
	if err != nil {
		return fmt.Errorf("mgmt: scale %s %s/%s to %d: %w", kind, namespace, name, replicas, err)
	}
	return nil
}

// JSONPatch applies an RFC 6902 patch to an object as Magnetite: for
// changes server-side apply cannot make, such as removing a list entry
// another writer owns.
func (c *Client) JSONPatch(ctx context.Context, kind, namespace, name string, patch []byte) error {
	r, err := c.Resource(ctx, kind)
	if err != nil {
		return err
	}
	if _, err := c.resourceClient(r, namespace).Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("mgmt: patch %s %s/%s: %w", kind, namespace, name, err)
	}
	return nil
}
