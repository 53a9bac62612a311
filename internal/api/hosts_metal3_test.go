package api_test

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/magnetite-io/magnetite/internal/api"
	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/auth"
	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/metal3"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testironic"
	"github.com/magnetite-io/magnetite/internal/testing/testmetal3"
)

func newMetal3Fixture(t *testing.T) (*hostsFixture, *testmetal3.Operator, *metal3.Backend) {
	t.Helper()
	w := newMetal3World(t)
	return w.f, w.bmo, w.backend
}

// metal3World is the Metal3 host inventory on a real kube-apiserver with
// the clients a test needs beside Magnetite's API.
type metal3World struct {
	f       *hostsFixture
	bmo     *testmetal3.Operator
	backend *metal3.Backend
	mc      *mgmt.Client
	dc      dynamic.Interface
	env     *testenv.APIServer
}

func newMetal3World(t *testing.T, opts ...testapi.Option) *metal3World {
	t.Helper()
	logs := &testironic.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := testmetal3.Start(t, log)
	// The stand-in operator has no controllers: the conductor's periodic
	// pass (which would collect the credentials of deleted hosts) stays out
	// of the way, and its mirroring step runs before each GET instead, as
	// if the pass had just run.
	srv := testapi.StartWithHosts(t, w.Backend, time.Hour, append([]testapi.Option{func(o *api.Options) { o.Log = log }}, opts...)...)
	f := &hostsFixture{t: t, c: newClient(t, srv), backend: w.Backend, logs: logs}
	f.mirror = func() {
		if err := srv.HostPass.Mirror(context.Background()); err != nil {
			f.t.Fatal(err)
		}
	}
	return &metal3World{f: f, bmo: w.Operator, backend: w.Backend, mc: w.Mgmt, dc: w.Dynamic, env: w.Env}
}

// TestMetal3HostsAssignedToProjects: a host enrolled for a project lives in
// that project's namespace, where Cluster API Provider Metal3 claims hosts
// for the project's clusters (and for no other project's); it counts only
// for that project's capacity, is seen only by that project's members
// (where the policy lets members read hosts) and by administrators, and
// keeps the project's namespace from being deleted with its last cluster.
func TestMetal3HostsAssignedToProjects(t *testing.T) {
	t.Parallel()
	policy, err := auth.ParsePolicy([]byte("\"host:get_all\": \"rule:admin_or_owner\"\n\"host:get\": \"rule:admin_or_owner\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := newMetal3World(t, func(o *api.Options) { o.Policy = policy })
	ctx := context.Background()
	f := w.f
	f.enroll(enrollBody("shared-0", "ipmi://10.0.1.1", nil))
	h := f.enroll(enrollBody("p1-node", "ipmi://10.0.1.2", map[string]any{"project_id": "p1", "labels": map[string]any{"pool": "gpu"}}))
	if h.ProjectID != "p1" {
		t.Errorf("enrolled host's project_id %q, want p1", h.ProjectID)
	}
	ns := w.mc.NamespaceName("p1")
	u, err := w.dc.Resource(testmetal3.BMHResource).Namespace(ns).Get(ctx, "p1-node", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the host is not a BareMetalHost in the project's namespace %s: %v", ns, err)
	}
	if u.GetAnnotations()["magnetite.io/project-id"] != "p1" || u.GetLabels()[mgmt.LabelInventory] == "" {
		t.Errorf("BareMetalHost metadata: labels %v, annotations %v", u.GetLabels(), u.GetAnnotations())
	}
	if _, err := w.dc.Resource(testmetal3.SecretResource).Namespace(ns).Get(ctx, "p1-node-bmc-secret", metav1.GetOptions{}); err != nil {
		t.Errorf("the host's BMC credentials are not beside it: %v", err)
	}

	names := func(c *client) string {
		var l apitypes.HostList
		c.must(http.StatusOK, "GET", "/v1/hosts", nil).decode(t, &l)
		var out []string
		for _, h := range l.Hosts {
			out = append(out, h.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(f.c); got != "p1-node,shared-0" {
		t.Errorf("an administrator lists %q", got)
	}
	p1, p2 := f.c.as("p1", "member"), f.c.as("p2", "member")
	if got := names(p1); got != "p1-node" {
		t.Errorf("a member of p1 lists %q, want p1-node only", got)
	}
	if got := names(p2); got != "" {
		t.Errorf("a member of p2 lists %q, want none", got)
	}
	p1.must(http.StatusOK, "GET", "/v1/hosts/p1-node", nil)
	p2.must(http.StatusNotFound, "GET", "/v1/hosts/p1-node", nil)
	p1.must(http.StatusForbidden, "DELETE", "/v1/hosts/p1-node", nil)
	f.c.must(http.StatusBadRequest, "POST", "/v1/hosts", enrollBody("bad-project", "ipmi://10.0.1.3", map[string]any{"project_id": "p\n1"}))

	// Capacity counts the hosts the project's clusters can claim.
	for project, want := range map[string]int{"p1": 1, "p2": 0, "": 1} {
		c, err := w.backend.CapacityMatching(ctx, project, map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Total != want {
			t.Errorf("hosts project %q's clusters could claim: %d, want %d", project, c.Total, want)
		}
	}

	// The project's last cluster going does not take its hosts along.
	w.env.InstallCRDs(t, filepath.Join(testenv.ClusterAPICRDs(t), "core"), nil)
	if err := w.mc.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	released, kept, err := w.mc.ReleaseNamespace(ctx, "p1")
	if err != nil || released || !strings.Contains(strings.Join(kept, ","), "BareMetalHost p1-node") {
		t.Errorf("releasing p1's namespace: released %v, kept by %v, %v; want kept by the host", released, kept, err)
	}

	// Deleting the host removes it and its credentials from the project's
	// namespace.
	f.remove("p1-node")
	f.waitGone("p1-node")
	if _, err := w.dc.Resource(testmetal3.SecretResource).Namespace(ns).Get(ctx, "p1-node-bmc-secret", metav1.GetOptions{}); err == nil {
		t.Error("the deleted host's BMC credentials are left in the project's namespace")
	}
}

// TestHostInventoryOnMetal3 drives the Metal3 backend of the host inventory
// through Magnetite's API against a real kube-apiserver with
// baremetal-operator's CRDs installed, whose schema validation checks every
// BareMetalHost Magnetite writes. No baremetal-operator controller runs:
// its Go module cannot be fetched in this build environment, so bmoPart
// plays its part (status through the status subresource, its finalizer),
// and the test checks that Magnetite writes what the operator's API asks
// for and reflects what the operator reports.
func TestHostInventoryOnMetal3(t *testing.T) {
	t.Parallel()
	f, bmo, backend := newMetal3Fixture(t)
	ctx := context.Background()

	t.Run("enroll writes a BareMetalHost and a credentials Secret", func(t *testing.T) {
		f.t, bmo.T = t, t
		rotational := false
		h := f.enroll(enrollBody("node-0", "redfish-virtualmedia+http://192.168.222.1:8000/redfish/v1/Systems/bmh-vm-01", map[string]any{
			"boot_mac_address": "00:5A:91:3F:9A:BD", "boot_mode": "UEFISecureBoot", "disable_certificate_verification": true,
			"labels":            map[string]any{"rack": "r1", "role": "worker"},
			"root_device_hints": map[string]any{"device_name": "/dev/sda", "min_size_gigabytes": 100, "rotational": rotational},
			"resource_class":    "baremetal-gold", "automated_cleaning_mode": "disabled",
		}))
		if h.Backend != "metal3" || h.State != baremetal.StateRegistering || h.BMCUsername != "admin" || !h.Managed ||
			h.BootMethod != "virtual-media" || h.ResourceClass != "CUSTOM_BAREMETAL_GOLD" || h.Labels["rack"] != "r1" ||
			h.AutomatedCleaningMode != "disabled" || h.UUID == "" || h.PowerState != "unknown" {
			t.Errorf("enrolled host = %+v", h)
		}
		u := bmo.Get("node-0")
		str := func(path ...string) string { s, _, _ := unstructured.NestedString(u.Object, path...); return s }
		for _, c := range []struct {
			path []string
			want string
		}{
			{[]string{"spec", "bmc", "address"}, "redfish-virtualmedia+http://192.168.222.1:8000/redfish/v1/Systems/bmh-vm-01"},
			{[]string{"spec", "bmc", "credentialsName"}, "node-0-bmc-secret"},
			{[]string{"spec", "bootMACAddress"}, "00:5a:91:3f:9a:bd"},
			{[]string{"spec", "bootMode"}, "UEFISecureBoot"},
			{[]string{"spec", "automatedCleaningMode"}, "disabled"},
			{[]string{"spec", "rootDeviceHints", "deviceName"}, "/dev/sda"},
		} {
			if got := str(c.path...); got != c.want {
				t.Errorf("BareMetalHost %s = %q, want %q", strings.Join(c.path, "."), got, c.want)
			}
		}
		if l := u.GetLabels(); l["rack"] != "r1" || l["role"] != "worker" || l[metal3.LabelResourceClass] != "CUSTOM_BAREMETAL_GOLD" {
			t.Errorf("BareMetalHost labels = %v", l)
		}
		online, _, _ := unstructured.NestedBool(u.Object, "spec", "online")
		noVerify, _, _ := unstructured.NestedBool(u.Object, "spec", "bmc", "disableCertificateVerification")
		minSize, _, _ := unstructured.NestedInt64(u.Object, "spec", "rootDeviceHints", "minSizeGigabytes")
		rot, rotSet, _ := unstructured.NestedBool(u.Object, "spec", "rootDeviceHints", "rotational")
		if !online || !noVerify || minSize != 100 || !rotSet || rot {
			t.Errorf("BareMetalHost spec: online %v, disableCertificateVerification %v, minSizeGigabytes %d, rotational %v/%v", online, noVerify, minSize, rot, rotSet)
		}
		s, err := bmo.Secrets.Get(ctx, "node-0-bmc-secret", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data, _, _ := unstructured.NestedStringMap(s.Object, "data")
		if dec(t, data["username"]) != "admin" || dec(t, data["password"]) != bmcPassword {
			t.Errorf("credentials Secret data = %v", data)
		}
		refs := s.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Kind != "BareMetalHost" || refs[0].Name != "node-0" || string(refs[0].UID) != h.UUID {
			t.Errorf("credentials Secret owner references = %+v, want the host %s", refs, h.UUID)
		}
		if s.GetLabels()[mgmt.LabelManagedBy] != mgmt.ManagedByValue || u.GetLabels()[mgmt.LabelManagedBy] != mgmt.ManagedByValue {
			t.Errorf("objects lack the managed-by label: %v, %v", s.GetLabels(), u.GetLabels())
		}
		// By UID as well as by name.
		if got := f.host(h.UUID); got.Name != "node-0" {
			t.Errorf("GET by uid found %q", got.Name)
		}
	})

	t.Run("bad enrollments are refused before anything is written", func(t *testing.T) {
		f.t = t
		cases := []struct {
			body   map[string]any
			status int
			says   string
		}{
			{enrollBody("bad-addr", "redfish://10.0.0.5:99999/redfish/v1/Systems/1", nil), http.StatusBadRequest, "port"},
			{enrollBody("old-ilo", "ilo4://10.0.0.6", map[string]any{"boot_mac_address": "52:54:00:00:00:06"}), http.StatusBadRequest, "no longer supports ilo4"},
			{enrollBody("Upper_Case", "ipmi://10.0.0.7", nil), http.StatusBadRequest, "lowercase DNS name"},
			{enrollBody("held", "ipmi://10.0.0.8", map[string]any{"target_state": "manageable"}), http.StatusBadRequest, "does not exist in Metal3"},
			{enrollBody("reserved", "ipmi://10.0.0.9", map[string]any{"labels": map[string]any{"magnetite.io/resource-class": "x"}}), http.StatusBadRequest, "reserved"},
			{enrollBody("node-0", "ipmi://10.0.0.10", nil), http.StatusConflict, "already exists"},
			{enrollBody("same-mac", "ipmi://10.0.0.11", map[string]any{"boot_mac_address": "00:5a:91:3f:9a:bd"}), http.StatusConflict, "already host node-0's"},
		}
		for _, tc := range cases {
			r := f.c.do("POST", "/v1/hosts", tc.body)
			f.bodies = append(f.bodies, string(r.Body))
			if r.Status != tc.status || !strings.Contains(string(r.Body), tc.says) {
				t.Errorf("enroll %v: %d %s, want %d saying %q", tc.body["name"], r.Status, r.Body, tc.status, tc.says)
			}
		}
		l, err := bmo.Hosts.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secrets, err := bmo.Secrets.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 1 || len(secrets.Items) != 1 {
			t.Errorf("refused enrollments left objects: %d hosts, %d secrets", len(l.Items), len(secrets.Items))
		}
	})

	t.Run("status is reflected from what baremetal-operator reports", func(t *testing.T) {
		f.t, bmo.T = t, t
		bmo.Register("node-0")
		bmo.Report("node-0", testmetal3.Status{State: "registering", ErrType: "registration error", Operational: "error",
			ErrMessage: "Failed to get power state for node: BMC refused the credentials", ErrCount: 2})
		h := f.host("node-0")
		if h.State != baremetal.StateRegistering || h.ErrorType != "registration error" || h.ErrorCount != 2 ||
			!strings.Contains(h.ErrorMessage, "refused the credentials") || h.OperationalStatus != "error" || h.PowerState != "off" {
			t.Errorf("host in error = state %s, error %q (%s, count %d), operational %s, power %s",
				h.State, h.ErrorMessage, h.ErrorType, h.ErrorCount, h.OperationalStatus, h.PowerState)
		}
		bmo.Report("node-0", testmetal3.Status{State: "inspecting", PoweredOn: true})
		if h := f.host("node-0"); h.State != baremetal.StateInspecting || h.ProvisionState != "inspecting" || h.PowerState != "on" || h.ErrorCount != 0 {
			t.Errorf("inspecting host = %+v", h)
		}
		inspected := "2026-11-22T03:00:00Z"
		bmo.Report("node-0", testmetal3.Status{State: "available", PoweredOn: true, Inspected: inspected, Hardware: map[string]any{
			"cpu":          map[string]any{"arch": "x86_64", "count": int64(32), "model": "Xeon", "clockMegahertz": 2400.0},
			"ramMebibytes": int64(131072),
			"storage": []any{
				map[string]any{"name": "/dev/sdb", "sizeBytes": int64(1920383410176)},
				map[string]any{"name": "/dev/sda", "sizeBytes": int64(480103981056)},
				map[string]any{"name": "/dev/sr0", "sizeBytes": int64(1073741824)},
			},
			"hostname": "node-0",
		}})
		h = f.host("node-0")
		if h.State != baremetal.StateAvailable || h.Hardware == nil || *h.Hardware != (apitypes.HostHardware{CPUArch: "x86_64", CPUCount: 32, MemoryMiB: 131072, LocalDiskGiB: 447}) ||
			h.InspectedAt == nil || *h.InspectedAt == "" || h.UpdatedAt == nil {
			t.Errorf("available host: state %s, hardware %+v, inspected %v", h.State, h.Hardware, h.InspectedAt)
		}
	})

	t.Run("list filters by label", func(t *testing.T) {
		f.t, bmo.T = t, t
		f.enroll(enrollBody("node-1", "ipmi://10.0.0.21", map[string]any{"labels": map[string]any{"rack": "r2"}}))
		var l apitypes.HostList
		f.call(http.StatusOK, "GET", "/v1/hosts?label=rack=r2", nil).decode(t, &l)
		if len(l.Hosts) != 1 || l.Hosts[0].Name != "node-1" || l.Hosts[0].HardwareType != "ipmi" || !l.Hosts[0].NeedsProvisioningNetwork {
			t.Errorf("hosts with rack=r2: %+v", l.Hosts)
		}
		f.call(http.StatusOK, "GET", "/v1/hosts", nil).decode(t, &l)
		if len(l.Hosts) != 2 {
			t.Errorf("all hosts: %d", len(l.Hosts))
		}
	})

	t.Run("actions map to spec fields and annotations", func(t *testing.T) {
		f.t, bmo.T = t, t
		act := func(status int, action string, body any) apitypes.Host {
			t.Helper()
			var h apitypes.Host
			r := f.call(status, "POST", "/v1/hosts/node-0/actions/"+action, body)
			if status == http.StatusAccepted {
				r.decode(t, &h)
			}
			return h
		}
		online := func() bool {
			v, _, _ := unstructured.NestedBool(bmo.Get("node-0").Object, "spec", "online")
			return v
		}
		ann := func() map[string]string { return bmo.Get("node-0").GetAnnotations() }

		act(http.StatusAccepted, "power", map[string]any{"target": "off"})
		if online() {
			t.Error("power off left spec.online true")
		}
		act(http.StatusAccepted, "power", map[string]any{"target": "on"})
		if !online() {
			t.Error("power on left spec.online false")
		}
		// Rebooting is for provisioned hosts; an available one is refused.
		if r := f.c.do("POST", "/v1/hosts/node-0/actions/reboot", map[string]any{"mode": "hard"}); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "provisioned hosts only") {
			t.Errorf("reboot of an available host: %d %s", r.Status, r.Body)
		}

		act(http.StatusAccepted, "inspect", nil)
		if v, ok := ann()["inspect.metal3.io"]; !ok || v != "" {
			t.Errorf("inspect annotation = %q, %v", v, ok)
		}
		act(http.StatusAccepted, "cleaning_mode", map[string]any{"automated_cleaning_mode": "metadata"})
		if m, _, _ := unstructured.NestedString(bmo.Get("node-0").Object, "spec", "automatedCleaningMode"); m != "metadata" {
			t.Errorf("automatedCleaningMode = %q", m)
		}
		if r := f.c.do("POST", "/v1/hosts/node-0/actions/provide", nil); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "nothing to provide") {
			t.Errorf("provide: %d %s", r.Status, r.Body)
		}

		bmo.Report("node-0", testmetal3.Status{State: "provisioned", PoweredOn: true, Consumer: "c1-workers-x7k2p"})
		h := f.host("node-0")
		if h.State != baremetal.StateProvisioned || h.Consumer != "Metal3Machine metal3/c1-workers-x7k2p" {
			t.Errorf("provisioned host: state %s, consumer %q", h.State, h.Consumer)
		}
		if r := f.c.do("POST", "/v1/hosts/node-0/actions/inspect", nil); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "available hosts only") {
			t.Errorf("inspect of a provisioned host: %d %s", r.Status, r.Body)
		}
		act(http.StatusAccepted, "reboot", map[string]any{"mode": "hard"})
		if v := ann()["reboot.metal3.io"]; v != `{"mode":"hard"}` {
			t.Errorf("hard reboot annotation = %q", v)
		}
		act(http.StatusAccepted, "reboot", map[string]any{"mode": "soft"})
		if v := ann()["reboot.metal3.io"]; v != `{"mode":"soft"}` {
			t.Errorf("soft reboot annotation = %q", v)
		}

		h = act(http.StatusAccepted, "detach", map[string]any{"reason": "moving to rack r9"})
		if !h.Detached || h.DetachedReason != "moving to rack r9" {
			t.Errorf("detached host: %+v", h)
		}
		if _, ok := ann()["baremetalhost.metal3.io/detached"]; !ok {
			t.Error("detach did not set the detached annotation")
		}
		if r := f.c.do("POST", "/v1/hosts/node-0/actions/power", map[string]any{"target": "off"}); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "attach it") {
			t.Errorf("power of a detached host: %d %s", r.Status, r.Body)
		}
		h = act(http.StatusAccepted, "attach", nil)
		a := ann()
		_, still := a["baremetalhost.metal3.io/detached"]
		if h.Detached || still || a["magnetite.io/detached-reason"] != "" {
			t.Errorf("attached host: detached %v, annotations %v", h.Detached, a)
		}
		// Detaching is only honoured in steady states.
		bmo.Report("node-1", testmetal3.Status{State: "inspecting"})
		if r := f.c.do("POST", "/v1/hosts/node-1/actions/detach", nil); r.Status != http.StatusConflict {
			t.Errorf("detach of an inspecting host: %d %s", r.Status, r.Body)
		}
	})

	// How hosts count for capacity is the backend's behaviour, tested next
	// to it (internal/baremetal/metal3).
	t.Run("a host provisioned for a cluster shows its consumer", func(t *testing.T) {
		f.t, bmo.T = t, t
		f.enroll(enrollBody("gold-e", "ipmi://10.0.1.5", map[string]any{"resource_class": "CUSTOM_BAREMETAL_GOLD"}))
		bmo.Register("gold-e")
		bmo.Report("gold-e", testmetal3.Status{State: "provisioned", Consumer: "c2-md-abc"})
		if h := f.host("gold-e"); h.State != baremetal.StateProvisioned || h.Consumer == "" {
			t.Errorf("provisioned host = state %s, consumer %q", h.State, h.Consumer)
		}
	})

	t.Run("delete waits for deprovisioning and takes the credentials along", func(t *testing.T) {
		f.t, bmo.T = t, t
		var h apitypes.Host
		f.call(http.StatusAccepted, "DELETE", "/v1/hosts/node-0", nil).decode(t, &h)
		if h.State != baremetal.StateDeleting || !h.DeleteRequested {
			t.Errorf("host being deleted = state %s, delete_requested %v", h.State, h.DeleteRequested)
		}
		if _, detached := bmo.Get("node-0").GetAnnotations()["baremetalhost.metal3.io/detached"]; detached {
			t.Error("a normal delete detached the host, skipping deprovisioning")
		}
		if r := f.c.do("POST", "/v1/hosts/node-0/actions/power", map[string]any{"target": "on"}); r.Status != http.StatusConflict {
			t.Errorf("power of a deleting host: %d %s", r.Status, r.Body)
		}
		bmo.Report("node-0", testmetal3.Status{State: "deprovisioning", PoweredOn: true})
		if h := f.host("node-0"); h.State != baremetal.StateDeleting {
			t.Errorf("deprovisioning host being deleted shows %s", h.State)
		}
		bmo.Release("node-0")
		f.call(http.StatusNotFound, "GET", "/v1/hosts/node-0", nil)
		if _, err := bmo.Secrets.Get(ctx, "node-0-bmc-secret", metav1.GetOptions{}); err != nil {
			t.Fatalf("the credentials went before the host was gone: %v", err)
		}
		// No garbage collector runs here; the periodic pass removes them.
		if err := backend.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := bmo.Secrets.Get(ctx, "node-0-bmc-secret", metav1.GetOptions{}); err == nil {
			t.Error("the credentials of a deleted host remain")
		}
		if _, err := bmo.Secrets.Get(ctx, "node-1-bmc-secret", metav1.GetOptions{}); err != nil {
			t.Errorf("Reconcile removed the credentials of a live host: %v", err)
		}

		// A forced delete detaches first: the host leaves Ironic untouched.
		f.call(http.StatusAccepted, "DELETE", "/v1/hosts/gold-e?force=true", nil)
		if v, ok := bmo.Get("gold-e").GetAnnotations()["baremetalhost.metal3.io/detached"]; !ok || v != `{"deleteAction":"delete"}` {
			t.Errorf("forced delete: detached annotation %q, %v", v, ok)
		}
		// A host the operator never took up goes at once.
		f.call(http.StatusNoContent, "DELETE", "/v1/hosts/node-1", nil)
		f.call(http.StatusNotFound, "GET", "/v1/hosts/node-1", nil)
		if _, err := bmo.Secrets.Get(ctx, "node-1-bmc-secret", metav1.GetOptions{}); err == nil {
			t.Error("the credentials of a host deleted at once remain")
		}
	})

	t.Run("the BMC password is never returned or logged", func(t *testing.T) {
		f.t = t
		f.assertNoPassword(bmcPassword)
	})
}

func dec(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("secret value %q: %v", s, err)
	}
	return string(b)
}
