package conductor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/cloud"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// What released CAPO writes when a server failed for good
// (cluster-api-provider-openstack v0.14.7 and v0.15.0-beta.0,
// controllers/openstackserver_controller.go and api/v1beta1/conditions_consts.go):
// a refused create leaves the OpenStackServer's instanceState ERROR with
// InstanceReady False (InstanceCreateFailed, gophercloud's error text) and
// no instanceID; a server Nova put in ERROR leaves instanceState ERROR,
// instanceID set and InstanceReady False (InstanceStateError) with no
// message at all. Either way IsServerTerminalError stops every later
// reconcile: CAPO never looks at the server again. The OpenStackMachine sets
// status.instanceID only once the server is ACTIVE; v0.15 copies the
// server's condition into its own (InstanceStateError, "Instance is in
// ERROR state" when the server's says nothing), v0.13 set
// failureReason/failureMessage.
const (
	// labelClusterName is Cluster API's label on the objects of a cluster
	// (CAPO copies it onto the OpenStackServers it makes).
	labelClusterName = "cluster.x-k8s.io/cluster-name"

	conditionInstanceReady     = "InstanceReady"
	reasonInstanceCreateFailed = "InstanceCreateFailed"
	reasonInstanceStateError   = "InstanceStateError"
	instanceStateError         = "ERROR"

	// annotationReplaceFailed marks a Machine whose server failed for good
	// and that the user (by retrying) or auto-healing has allowed Magnetite
	// to replace; the value is when.
	annotationReplaceFailed = "magnetite.io/replace-failed-server"

	// controlPlaneReplaceGrace bounds how long, after replacing one
	// control-plane machine, the next waits for the control plane to make
	// the new machine (KubeadmControlPlane may refuse to while another
	// machine of it has no node).
	controlPlaneReplaceGrace = 2 * time.Minute

	// serverCheckEvery is how often the servers of machines on their way
	// are looked at again.
	serverCheckEvery = 10 * time.Second

	// autoHealEvery bounds how often auto-healing replaces a cluster's
	// failed machines by itself, and autoHealRecheck how often it asks the
	// cloud whether their cause is gone.
	autoHealEvery   = 3 * time.Minute
	autoHealRecheck = 30 * time.Second
)

// machineServer is one machine of a cluster on OpenStack, read from its
// OpenStackMachine and (CAPO v0.11+) OpenStackServer.
type machineServer struct {
	// Machine is the Cluster API Machine that owns the OpenStackMachine;
	// Name is the OpenStackMachine's (and its OpenStackServer's).
	Machine, Name string
	ControlPlane  bool
	// ServerGroup is the server group ID the machine asks for.
	ServerGroup string
	// ServerID is Nova's ID of the machine's server; "" when it has none
	// (not made yet, or Nova refused to make it).
	ServerID    string
	Provisioned bool
	// Failed: the server failed for good, CAPO will not try again.
	Failed bool
	// Recorded is what CAPO wrote of the failure.
	Recorded string
	Deleting bool
	// UID identifies the OpenStackMachine, to say each failure once.
	UID string
	// Refs are what the server asks of the cloud.
	Refs cloud.ServerRefs
}

// readMachineServer reads an OpenStackMachine (v1beta1 or v1beta2) and its
// OpenStackServer (nil when there is none).
func readMachineServer(osm, oss map[string]any) machineServer {
	ms := machineServer{
		Name:        name(osm),
		ServerGroup: nestedString(osm, "spec", "serverGroup", "id"),
		Deleting:    nestedString(osm, "metadata", "deletionTimestamp") != "",
		UID:         nestedString(osm, "metadata", "uid"),
	}
	_, ms.ControlPlane = labelsOf(osm)[labelControlPlane]
	ms.Refs = serverRefs(osm)
	refs, _ := nested(osm, "metadata", "ownerReferences").([]any)
	for _, r := range refs {
		if ref, ok := r.(map[string]any); ok && ref["kind"] == "Machine" {
			ms.Machine, _ = ref["name"].(string)
		}
	}
	provisioned, _ := nested(osm, "status", "initialization", "provisioned").(bool)
	ready, _ := nested(osm, "status", "ready").(bool)
	ms.Provisioned = provisioned || ready
	ms.ServerID = nestedString(osm, "status", "instanceID")
	if oss != nil {
		if id := nestedString(oss, "status", "instanceID"); id != "" {
			ms.ServerID = id
		}
		if nestedString(oss, "status", "instanceState") == instanceStateError {
			ms.Failed = true
			if c, ok := findCondition(oss, conditionInstanceReady); ok {
				ms.Recorded = strings.TrimSpace(c.Message)
			}
		}
	}
	if ms.Failed || ms.Provisioned {
		return ms
	}
	// Without an OpenStackServer (or before it says so), the machine's own
	// words: v0.15's mirrored condition, v0.13's failure fields.
	if c, ok := findCondition(osm, conditionInstanceReady); ok && c.Status == "False" &&
		(c.Reason == reasonInstanceCreateFailed || c.Reason == reasonInstanceStateError) {
		ms.Failed, ms.Recorded = true, strings.TrimSpace(c.Message)
	}
	for _, path := range [][]string{{"status"}, {"status", "deprecated", "v1beta1"}} {
		reason := nestedString(osm, append(slices.Clone(path), "failureReason")...)
		msg := nestedString(osm, append(slices.Clone(path), "failureMessage")...)
		if reason != "" || msg != "" {
			ms.Failed = true
			if ms.Recorded == "" {
				ms.Recorded = strings.TrimSpace(msg)
			}
		}
	}
	return ms
}

// serverRefs reads what an OpenStackMachine asks of the cloud: v1beta1
// names its flavor by spec.flavor (a name) or spec.flavorID, v1beta2 by
// spec.flavor.id or spec.flavor.filter.name; images and server groups by
// id or filter name in both; the root volume's zone only counts when it
// is named (from: Name).
func serverRefs(osm map[string]any) cloud.ServerRefs {
	byIDOrName := func(path ...string) string {
		if id := nestedString(osm, append(path, "id")...); id != "" {
			return id
		}
		return nestedString(osm, append(path, "filter", "name")...)
	}
	r := cloud.ServerRefs{
		Flavor:      nestedString(osm, "spec", "flavor"),
		Image:       byIDOrName("spec", "image"),
		ServerGroup: nestedString(osm, "spec", "serverGroup", "id"),
		Keypair:     nestedString(osm, "spec", "sshKeyName"),
		VolumeType:  nestedString(osm, "spec", "rootVolume", "type"),
	}
	if r.Flavor == "" {
		r.Flavor = nestedString(osm, "spec", "flavorID")
	}
	if r.Flavor == "" {
		r.Flavor = byIDOrName("spec", "flavor")
	}
	if nestedString(osm, "spec", "rootVolume", "availabilityZone", "from") == "Name" {
		r.VolumeZone = nestedString(osm, "spec", "rootVolume", "availabilityZone", "name")
	}
	return r
}

// failureText says, in OpenStack's own words, why a machine's server failed:
// Nova's fault when the server exists, otherwise the service's message in
// what CAPO recorded of the refused create.
func failureText(ms machineServer, novaFault string) string {
	switch {
	case ms.ServerID != "" && novaFault != "":
		return "its server " + ms.ServerID + " is in ERROR: " + oneLine(novaFault)
	case ms.ServerID != "":
		msg := cloud.RefusalMessage(ms.Recorded)
		if msg == "" || msg == "Instance is in ERROR state" {
			return "its server " + ms.ServerID + " is in ERROR and Nova recorded no fault"
		}
		return "its server " + ms.ServerID + " is in ERROR: " + oneLine(msg)
	case ms.Recorded != "":
		return "OpenStack refused to create its server: " + oneLine(cloud.RefusalMessage(ms.Recorded))
	}
	return "OpenStack refused to create its server"
}

// retryHint ends a failed server's status: CAPO gives up on it, Magnetite
// replaces it once asked again.
const retryHint = " (CAPO does not try again: fix the cause, then retry the cluster, for example by resizing it to its current size, and Magnetite replaces the machine)"

// machineServers reads the OpenStack machines of the cluster whose Cluster
// API objects are called clusterName, with their servers. Clusters on other
// infrastructures have none.
func (c *Conductor) machineServers(ctx context.Context, namespace, clusterName string) ([]machineServer, error) {
	if _, ok := c.mc.Kinds()["OpenStackMachine"]; !ok {
		return nil, nil
	}
	selector := labelClusterName + "=" + clusterName
	machines, err := c.mc.List(ctx, "OpenStackMachine", namespace, selector)
	if errors.Is(err, mgmt.ErrKindNotServed) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	servers := map[string]map[string]any{}
	if _, ok := c.mc.Kinds()["OpenStackServer"]; ok && len(machines) > 0 {
		list, err := c.mc.List(ctx, "OpenStackServer", namespace, selector)
		if err != nil && !errors.Is(err, mgmt.ErrKindNotServed) {
			return nil, err
		}
		for _, s := range list {
			servers[s.GetName()] = s.Object
		}
	}
	out := make([]machineServer, 0, len(machines))
	for _, m := range machines {
		// CAPO names a machine's OpenStackServer after its OpenStackMachine.
		ms := readMachineServer(m.Object, servers[m.GetName()])
		if ms.Machine != "" {
			out = append(out, ms)
		}
	}
	return out, nil
}

// serverFailures says, per Machine name, why each machine's server failed
// for good, reading Nova's fault as the cluster for servers that exist.
// A fault is read once per server: a server in ERROR stays so.
func (c *Conductor) serverFailures(ctx context.Context, clusterUUID string, ms []machineServer) map[string]string {
	out := map[string]string{}
	var cl *model.Cluster
	for _, m := range ms {
		if !m.Failed || m.Deleting {
			continue
		}
		novaFault := ""
		if m.ServerID != "" {
			if f, ok := c.faults.Load(m.ServerID); ok {
				novaFault = f.(string)
			} else if reader, ok := c.opts.Facts.(ServerFaults); ok {
				if cl == nil {
					cl, _ = c.st.GetClusterByUUID(ctx, clusterUUID)
				}
				if cl != nil {
					f, err := reader.ServerFault(ctx, cl, m.ServerID)
					if err != nil {
						c.log.Warn("read a failed server's fault from Nova", "cluster", clusterUUID, "server", m.ServerID, "error", err)
					} else if f != "" {
						c.faults.Store(m.ServerID, f)
						novaFault = f
					}
				}
			}
		}
		out[m.Machine] = failureText(m, novaFault)
	}
	return out
}

// serverRetries says, by Machine name, why CAPO is still trying to make
// the server of a machine that has none yet, from the Warning events it
// records on the OpenStackServer: v0.14.7 says a refused port nowhere
// else (pkg/cloud/services/networking/port.go, FailedCreatePort), and
// retries it.
func (c *Conductor) serverRetries(ctx context.Context, namespace string, ms []machineServer) map[string]string {
	waiting := map[string]string{} // OpenStackServer name -> Machine
	for _, m := range ms {
		if !m.Failed && !m.Provisioned && !m.Deleting && m.ServerID == "" {
			waiting[m.Name] = m.Machine
		}
	}
	if _, ok := c.mc.Kinds()["Event"]; !ok || len(waiting) == 0 {
		return nil
	}
	events, err := c.mc.ListFields(ctx, "Event", namespace, "involvedObject.kind=OpenStackServer,type=Warning")
	if err != nil {
		c.log.Warn("read CAPO's events of the cluster's servers", "namespace", namespace, "error", err)
		return nil
	}
	out := map[string]string{}
	newest := map[string]string{}
	for _, e := range events {
		machine, ok := waiting[nestedString(e.Object, "involvedObject", "name")]
		at := nestedString(e.Object, "lastTimestamp")
		if !ok || at < newest[machine] {
			continue
		}
		newest[machine] = at
		out[machine] = "CAPO keeps trying to make its server: " + oneLine(cloud.RefusalMessage(nestedString(e.Object, "message")))
	}
	return out
}

// needsServerCheck reports whether some machine of the cluster waits for
// its infrastructure: only then can a server have failed on the way.
func needsServerCheck(obs Observed) bool {
	if obs.Cluster == nil {
		return false
	}
	for _, m := range obs.Machines {
		if nestedString(m, "metadata", "deletionTimestamp") != "" {
			continue
		}
		v2, _ := nested(m, "status", "initialization", "infrastructureProvisioned").(bool)
		v1, _ := nested(m, "status", "infrastructureReady").(bool)
		if !v2 && !v1 {
			return true
		}
	}
	return false
}

// lookAtServers reads the cluster's OpenStack machines when some wait for
// infrastructure, and puts why their servers failed into obs, recording
// each new failure as an event.
func (c *Conductor) lookAtServers(ctx context.Context, clusterUUID string, obs *Observed) []machineServer {
	if !needsServerCheck(*obs) {
		return nil
	}
	ms, err := c.machineServers(ctx, nestedString(obs.Cluster, "metadata", "namespace"), name(obs.Cluster))
	if err != nil {
		c.log.Warn("read the cluster's OpenStack machines", "cluster", clusterUUID, "error", err)
		return nil
	}
	obs.ServerFailures = c.serverFailures(ctx, clusterUUID, ms)
	obs.ServerRetries = c.serverRetries(ctx, nestedString(obs.Cluster, "metadata", "namespace"), ms)
	// Nothing Magnetite watches changes when CAPO gives a server up: at
	// v0.14.7 only the OpenStackServer says so, and it carries none of
	// Magnetite's labels. While a machine's server may still fail, look
	// again after a while.
	for _, m := range ms {
		if !m.Failed && !m.Provisioned && !m.Deleting {
			c.queue.AddAfter(clusterUUID, serverCheckEvery)
			break
		}
	}
	for _, m := range ms {
		text, failed := obs.ServerFailures[m.Machine]
		if !failed || m.UID == "" {
			continue
		}
		if _, seen := c.failureNoted.LoadOrStore(m.UID, true); seen {
			continue
		}
		role := "worker"
		if m.ControlPlane {
			role = "control-plane"
		}
		c.event(ctx, clusterUUID, model.EventCondition, "", "server failed",
			fmt.Sprintf("%s machine %s: %s", role, m.Machine, text))
	}
	return ms
}

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
