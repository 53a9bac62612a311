package conductor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// Replacing the machines whose servers failed for good (failedservers.go):
// the user's retry or auto-healing marks them, the status pass deletes
// them once Cluster API has the retried templates in place, and their
// MachineSet or KubeadmControlPlane makes new ones.
const (
	// annotationReplaceFailed marks a Machine whose server failed for good
	// and that the user (by retrying) or auto-healing has allowed Magnetite
	// to replace; the value is when.
	annotationReplaceFailed = "magnetite.io/replace-failed-server"

	// controlPlaneReplaceGrace bounds how long, after replacing one
	// control-plane machine, the next waits for the control plane to make
	// the new machine (KubeadmControlPlane may refuse to while another
	// machine of it has no node).
	controlPlaneReplaceGrace = 2 * time.Minute

	// autoHealEvery bounds how often auto-healing replaces a cluster's
	// failed machines by itself, and autoHealRecheck how often it asks the
	// cloud whether their cause is gone.
	autoHealEvery   = 3 * time.Minute
	autoHealRecheck = 30 * time.Second
)

// approveReplacements marks the machines the user's retry allows Magnetite
// to replace: those whose server failed for good, and control-plane
// machines stranded without a server in a server group that is gone (CAPO
// main retries those with the old group's ID for ever). current are the
// cluster's server group IDs by name, nil when it has none. The
// replacement itself waits until Cluster API has rolled the retried
// desired state into the machine templates (see replaceFailedMachines), so
// the new machines ask for what the retry rendered.
func (c *Conductor) approveReplacements(ctx context.Context, sc *scope, current map[string]string) error {
	ms, err := c.machineServers(ctx, sc.namespace, clusterObjectName(sc.cluster))
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(current))
	for _, id := range current {
		ids = append(ids, id)
	}
	var marked []string
	for _, m := range ms {
		stranded := m.ControlPlane && m.ServerID == "" && !m.Provisioned && m.ServerGroup != "" && len(ids) > 0 && !slices.Contains(ids, m.ServerGroup)
		if m.Deleting || !(m.Failed || stranded) {
			continue
		}
		allowed, err := c.allowReplacement(ctx, sc.owner, sc.namespace, m.Machine)
		if err != nil {
			return err
		}
		if !allowed {
			continue
		}
		marked = append(marked, m.Machine)
	}
	if len(marked) > 0 {
		c.event(ctx, sc.cluster.UUID, model.EventOperation, "", "failed machines",
			"the retry replaces the machines whose servers failed, once Cluster API has rolled the new desired state into their templates: "+strings.Join(marked, ", "))
	}
	return nil
}

// allowReplacement marks a Machine as one Magnetite may replace, and
// reports whether it newly did (false when the machine is gone or already
// marked).
func (c *Conductor) allowReplacement(ctx context.Context, owner mgmt.Owner, namespace, machineName string) (bool, error) {
	machine, err := c.mc.Get(ctx, "Machine", namespace, machineName)
	if err != nil || machine.GetAnnotations()[annotationReplaceFailed] != "" {
		return false, nil
	}
	patch := &unstructured.Unstructured{}
	patch.SetAPIVersion(machine.GetAPIVersion())
	patch.SetKind("Machine")
	patch.SetName(machineName)
	patch.SetNamespace(namespace)
	patch.SetAnnotations(map[string]string{annotationReplaceFailed: c.now().UTC().Format(time.RFC3339)})
	if _, err := c.mc.Apply(ctx, owner, patch); err != nil {
		return false, classifyApplyError(err)
	}
	return true, nil
}

// autoHeal allows, for a cluster with auto-healing on, the replacement of
// the machines whose servers failed once the cause is gone: everything the
// server asks for (flavor, image, server group, keypair, root volume type
// and zone) exists again. A failure no missing resource explains (no
// valid host, a quota) is tried again too, at most once per autoHealEvery
// per cluster, as a user's retry would. The cloud is asked at most every
// autoHealRecheck per cluster, and again after that even when nothing in the
// management cluster changes.
func (c *Conductor) autoHeal(ctx context.Context, clusterUUID string, obs Observed, ms []machineServer) {
	var waiting []machineServer
	for _, m := range ms {
		if m.Failed && !m.Deleting && !approvedMachine(obs, m.Machine) {
			waiting = append(waiting, m)
		}
	}
	checker, ok := c.opts.Facts.(ServerFaults)
	if len(waiting) == 0 || !ok {
		return
	}
	if next, ok := c.autoHealNext.Load(clusterUUID); ok && c.now().Before(next.(time.Time)) {
		return
	}
	// Nothing in the management cluster changes when the cloud does: look
	// again later whatever this look finds.
	wait, again := autoHealRecheck, true
	defer func() {
		c.autoHealNext.Store(clusterUUID, c.now().Add(wait))
		if again {
			c.queue.AddAfter(clusterUUID, wait)
		}
	}()
	cl, err := c.st.GetClusterByUUID(ctx, clusterUUID)
	if err != nil || cl.Status == model.DeleteInProgress {
		return
	}
	ct, err := c.st.GetClusterTemplateByUUID(ctx, cl.ClusterTemplateID)
	if err != nil || !driver.ClusterLabels(ct, cl).Bool(labels.AutoHealingEnabled) {
		again = false // its users retry; their operation looks again
		return
	}
	owner := mgmt.Owner{ClusterUUID: cl.UUID, ProjectID: cl.ProjectID}
	namespace := nestedString(obs.Cluster, "metadata", "namespace")
	var allowed []string
	for _, m := range waiting {
		missing, err := checker.MissingServerRefs(ctx, cl, m.Refs)
		if err != nil {
			c.log.Warn("auto-healing: check what a failed server asks of the cloud", "cluster", clusterUUID, "machine", m.Machine, "error", err)
			return
		}
		if len(missing) > 0 {
			continue
		}
		ok, err := c.allowReplacement(ctx, owner, namespace, m.Machine)
		if err != nil {
			c.log.Warn("auto-healing: allow a failed machine's replacement", "cluster", clusterUUID, "machine", m.Machine, "error", err)
			return
		}
		if ok {
			allowed = append(allowed, m.Machine)
		}
	}
	if len(allowed) > 0 {
		wait = autoHealEvery
		c.event(ctx, clusterUUID, model.EventCondition, "", "auto-healing",
			"what the failed servers asked of the cloud exists now: replacing their machines "+strings.Join(allowed, ", "))
	}
}

// approvedMachine reports whether a Machine is marked for replacement.
func approvedMachine(obs Observed, machineName string) bool {
	for _, m := range obs.Machines {
		if name(m) == machineName {
			a, _ := nested(m, "metadata", "annotations").(map[string]any)
			return a[annotationReplaceFailed] != nil
		}
	}
	return false
}

// controlPlaneReplacement is this conductor's last replacement of one of a
// cluster's control-plane machines: when, and which control-plane machines
// existed then.
type controlPlaneReplacement struct {
	At    time.Time
	Known []string
}

// replacementsDue picks, among machines allowed to be replaced (approved),
// those to delete now: every worker, and one control-plane machine at a
// time, only while no other control-plane machine is on its way (being
// deleted, or being built). After the last replacement (last), until a
// control-plane machine it did not know exists (or the grace has passed),
// the control plane is still making the new one.
func replacementsDue(ms []machineServer, approved map[string]bool, last controlPlaneReplacement, now time.Time) []machineServer {
	var due []machineServer
	cpBusy := !last.At.IsZero() && now.Sub(last.At) < controlPlaneReplaceGrace
	for _, m := range ms {
		if m.ControlPlane && !slices.Contains(last.Known, m.Machine) {
			cpBusy = false // the replacement exists: it is judged below
		}
	}
	var cpCandidates []machineServer
	for _, m := range ms {
		replaceable := approved[m.Machine] && !m.Deleting && (m.Failed || (m.ServerID == "" && !m.Provisioned))
		switch {
		case replaceable && !m.ControlPlane:
			due = append(due, m)
		case replaceable:
			cpCandidates = append(cpCandidates, m)
		case m.ControlPlane && (m.Deleting || (!m.Provisioned && !m.Failed)):
			cpBusy = true
		}
	}
	if !cpBusy && len(cpCandidates) > 0 {
		slices.SortFunc(cpCandidates, func(a, b machineServer) int { return strings.Compare(a.Machine, b.Machine) })
		due = append(due, cpCandidates[0])
	}
	return due
}

// replaceFailedMachines deletes the machines due for replacement; their
// MachineSet or KubeadmControlPlane makes new ones from the current
// templates. It acts only once Cluster API has reconciled the desired
// state Magnetite applied last (appliedGeneration) and no operation of the
// cluster is pending, so a replacement asks for what the retry rendered;
// otherwise the next status pass, which every change of the cluster's
// objects brings, looks again.
func (c *Conductor) replaceFailedMachines(ctx context.Context, clusterUUID string, obs Observed, s Snapshot, ms []machineServer, appliedGeneration int64, pending bool) {
	if len(ms) == 0 || pending || !s.Exists || s.Deleting || !s.TopologyApplied || s.ObservedGeneration < appliedGeneration {
		return
	}
	approved := map[string]bool{}
	for _, m := range obs.Machines {
		if approvedMachine(Observed{Machines: []map[string]any{m}}, name(m)) {
			approved[name(m)] = true
		}
	}
	var last controlPlaneReplacement
	if v, ok := c.cpReplaced.Load(clusterUUID); ok {
		last = v.(controlPlaneReplacement)
	}
	namespace := nestedString(obs.Cluster, "metadata", "namespace")
	for _, m := range replacementsDue(ms, approved, last, c.now()) {
		deleted, err := c.mc.Delete(ctx, "Machine", namespace, m.Machine)
		if err != nil {
			c.log.Warn("replace a machine whose server failed", "cluster", clusterUUID, "machine", m.Machine, "error", err)
			continue
		}
		if !deleted {
			continue
		}
		role := "worker"
		if m.ControlPlane {
			role = "control-plane"
			known := []string{}
			for _, other := range ms {
				if other.ControlPlane {
					known = append(known, other.Machine)
				}
			}
			c.cpReplaced.Store(clusterUUID, controlPlaneReplacement{At: c.now(), Known: known})
		}
		msg := fmt.Sprintf("replaced the %s machine %s, whose server had failed", role, m.Machine)
		if text := obs.ServerFailures[m.Machine]; text != "" {
			msg += " (" + text + ")"
		}
		c.event(ctx, clusterUUID, model.EventOperation, "", "failed machines", msg)
	}
}
