package conductor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/model"
)

// strandedWait bounds how long one attempt waits for Cluster API to move
// the control plane to machine templates naming the re-made server groups;
// the operation is then retried (and looks again).
const strandedWait = 2 * time.Minute

// labelClusterName is Cluster API's label on the objects of a cluster.
const labelClusterName = "cluster.x-k8s.io/cluster-name"

// replaceStrandedMachines deletes the control-plane machines that wait for
// a server in a server group that is gone. When someone deletes a cluster's
// server group behind Magnetite's back, Nova refuses every server asked for
// in it, and CAPO retries with the group's ID for ever (an OpenStackMachine
// never changes). ensureServerGroups makes the group again under its name
// and the machines are rendered with the new ID: Cluster API rolls a
// machine deployment to its new template by itself, but the control plane
// rolls only machines that have become nodes, so a first control-plane
// machine that never got a server would wait for ever. Once the control
// plane's template names only current groups, such a machine (no server,
// a group the cluster no longer has) is deleted and Cluster API makes it
// again from the new template. Machines with a server are left alone.
//
// current are the cluster's server group IDs, by name. It is stateless, so
// a retried operation (or the user's next resize) finds what is left.
func (c *Conductor) replaceStrandedMachines(ctx context.Context, sc *scope, current map[string]string) error {
	if len(current) == 0 {
		return nil
	}
	ids := make([]string, 0, len(current))
	for _, id := range current {
		ids = append(ids, id)
	}
	selector := labelClusterName + "=" + clusterObjectName(sc.cluster) + "," + labelControlPlane
	deadline := c.now().Add(strandedWait)
	for {
		stranded, err := c.strandedMachines(ctx, sc.namespace, selector, ids)
		if err != nil || len(stranded) == 0 {
			return err
		}
		moved, err := c.controlPlaneOnCurrentGroups(ctx, sc, ids)
		if err != nil {
			return err
		}
		if moved {
			for _, m := range stranded {
				if _, err := c.mc.Delete(ctx, "Machine", sc.namespace, m); err != nil {
					return err
				}
			}
			c.event(ctx, sc.cluster.UUID, model.EventOperation, "", "server groups",
				"replaced the control-plane machines that waited for a server in a server group that is gone: "+strings.Join(stranded, ", "))
			return nil
		}
		if c.now().After(deadline) {
			return fmt.Errorf("the control plane still waits for a server in a server group that is gone (machines %s): Cluster API has not moved it to the new machine template yet",
				strings.Join(stranded, ", "))
		}
		if err := Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
}

// strandedMachines are the Machines whose OpenStackMachine has no server
// and names a server group not among ids.
func (c *Conductor) strandedMachines(ctx context.Context, namespace, selector string, ids []string) ([]string, error) {
	infra, err := c.mc.List(ctx, "OpenStackMachine", namespace, selector)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range infra {
		group, _, _ := unstructured.NestedString(m.Object, "spec", "serverGroup", "id")
		server, _, _ := unstructured.NestedString(m.Object, "status", "instanceID")
		if group == "" || server != "" || slices.Contains(ids, group) || m.GetDeletionTimestamp() != nil {
			continue
		}
		for _, ref := range m.GetOwnerReferences() {
			if ref.Kind == "Machine" {
				out = append(out, ref.Name)
			}
		}
	}
	return out, nil
}

// controlPlaneOnCurrentGroups reports whether the cluster's control plane
// makes its machines from a template that names one of ids.
func (c *Conductor) controlPlaneOnCurrentGroups(ctx context.Context, sc *scope, ids []string) (bool, error) {
	cps, err := c.mc.List(ctx, "KubeadmControlPlane", sc.namespace, labelClusterName+"="+clusterObjectName(sc.cluster))
	if err != nil || len(cps) == 0 {
		return false, err
	}
	tmpl, _, _ := unstructured.NestedString(cps[0].Object, "spec", "machineTemplate", "spec", "infrastructureRef", "name")
	if tmpl == "" {
		return false, nil
	}
	t, err := c.mc.Get(ctx, "OpenStackMachineTemplate", sc.namespace, tmpl)
	if err != nil {
		return false, err
	}
	group, _, _ := unstructured.NestedString(t.Object, "spec", "template", "spec", "serverGroup", "id")
	return slices.Contains(ids, group), nil
}
