package conductor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/cloud"
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

	// serverCheckEvery is how often the servers of machines on their way
	// are looked at again.
	serverCheckEvery = 10 * time.Second
	// serverLookFresh is how long one look at a cluster's OpenStack
	// machines, servers and CAPO's events serves the status syncs that
	// follow: they are listed, not watched (CAPO's objects carry no label
	// the watch selects by), and Cluster API's changes of a busy cluster
	// wake many syncs a second.
	serverLookFresh = 2 * time.Second
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

// serverLook is one look at a cluster's OpenStack machines and servers.
type serverLook struct {
	at                time.Time
	ms                []machineServer
	failures, retries map[string]string
}

// lookAtServers reads the cluster's OpenStack machines when some wait for
// infrastructure, and puts why their servers failed into obs, recording
// each new failure as an event.
func (c *Conductor) lookAtServers(ctx context.Context, clusterUUID string, obs *Observed) []machineServer {
	if !needsServerCheck(*obs) {
		c.serverLooks.Delete(clusterUUID)
		return nil
	}
	now := c.now()
	var look serverLook
	if v, ok := c.serverLooks.Load(clusterUUID); ok && now.Sub(v.(serverLook).at) < serverLookFresh {
		// A busy cluster wakes many syncs a second; the look that follows
		// this one's freshness sees what they did not.
		look = v.(serverLook)
		c.queue.AddAfter(clusterUUID, serverLookFresh-now.Sub(look.at))
	} else {
		namespace := nestedString(obs.Cluster, "metadata", "namespace")
		ms, err := c.machineServers(ctx, namespace, name(obs.Cluster))
		if err != nil {
			c.log.Warn("read the cluster's OpenStack machines", "cluster", clusterUUID, "error", err)
			return nil
		}
		look = serverLook{at: now, ms: ms, failures: c.serverFailures(ctx, clusterUUID, ms), retries: c.serverRetries(ctx, namespace, ms)}
		c.serverLooks.Store(clusterUUID, look)
		// Nothing Magnetite watches changes when CAPO gives a server up:
		// at v0.14.7 only the OpenStackServer says so, and it carries none
		// of Magnetite's labels. While a machine's server may still fail,
		// look again after a while.
		for _, m := range ms {
			if !m.Failed && !m.Provisioned && !m.Deleting {
				c.queue.AddAfter(clusterUUID, serverCheckEvery)
				break
			}
		}
	}
	ms := look.ms
	obs.ServerFailures, obs.ServerRetries = look.failures, look.retries
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
