package capi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/driver/capi/metal3"
	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/model"
)

func caseRequest(t testing.TB, name string) driver.Request {
	t.Helper()
	for _, c := range loadCases(t) {
		if c.Name == name {
			return c.Request(t)
		}
	}
	t.Fatalf("no case %s", name)
	return driver.Request{}
}

var osDriver = openstack.New(capi.Options{DefaultBootVolumeSize: 20})

func mustRender(t *testing.T, req driver.Request) *driver.Result {
	t.Helper()
	res, err := osDriver.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func renderErr(t *testing.T, req driver.Request) string {
	t.Helper()
	_, err := osDriver.Render(req)
	if err == nil {
		t.Fatal("render succeeded; want a validation error")
	}
	if !errors.Is(err, driver.ErrInvalid) {
		t.Errorf("error does not wrap driver.ErrInvalid: %v", err)
	}
	return err.Error()
}

// machineSpecs returns the effective OpenStackMachine spec of each machine
// group, as Cluster API will derive it, keyed by group name (the control
// plane is "control-plane").
func machineSpecs(t *testing.T, res *driver.Result) map[string]map[string]any {
	t.Helper()
	preview, err := capi.Preview(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	var cluster string
	for _, o := range res.Objects {
		if o.GetKind() == "Cluster" {
			cluster = o.GetName()
		}
	}
	out := map[string]map[string]any{}
	for _, o := range preview {
		if o.GetKind() != "OpenStackMachineTemplate" {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(o.GetName(), cluster+"-"), "md-"), "-machine")
		spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
		out[name] = spec
	}
	return out
}

func infraCluster(t *testing.T, res *driver.Result) map[string]any {
	t.Helper()
	preview, err := capi.Preview(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range preview {
		if o.GetKind() == "OpenStackClusterTemplate" {
			spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			return spec
		}
	}
	t.Fatal("no OpenStackClusterTemplate")
	return nil
}

func machineDeployment(t *testing.T, res *driver.Result, name string) map[string]any {
	t.Helper()
	for _, o := range res.Objects {
		if o.GetKind() != "Cluster" {
			continue
		}
		mds, _, _ := unstructured.NestedSlice(o.Object, "spec", "topology", "workers", "machineDeployments")
		for _, x := range mds {
			if md := x.(map[string]any); md["name"] == name {
				return md
			}
		}
	}
	t.Fatalf("no machine deployment %s", name)
	return nil
}

func clusterObject(t *testing.T, res *driver.Result) *unstructured.Unstructured {
	t.Helper()
	for _, o := range res.Objects {
		if o.GetKind() == "Cluster" {
			return o
		}
	}
	t.Fatal("no Cluster")
	return nil
}

func ptr[T any](v T) *T { return &v }

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestBareMetalTemplateRejectsVirtualFlavor(t *testing.T) {
	req := caseRequest(t, "bm-only")
	for _, ng := range req.NodeGroups {
		if ng.Role == model.RoleMaster {
			ng.FlavorID = ptr("m1.small-virtual")
		}
	}
	req.Facts.Flavors = append(req.Facts.Flavors, facts.Flavor{ID: "v1", Name: "m1.small-virtual", VCPUs: 1, RAM: 2048, Disk: 20})
	msg := renderErr(t, req)
	for _, want := range []string{"default-master", "flavor m1.small-virtual is not a bare-metal flavor", "resources:CUSTOM_<CLASS>=1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q should mention %q", msg, want)
		}
	}
}

func TestBareMetalNodeGroupLabelRejectsVirtualFlavor(t *testing.T) {
	req := caseRequest(t, "vm-only")
	req.NodeGroups[1].Labels["server_type"] = "bm"
	msg := renderErr(t, req)
	if !strings.Contains(msg, "node group default-worker: flavor m1.xlarge is not a bare-metal flavor: the node group's server_type=bm label needs an Ironic-backed flavor") {
		t.Errorf("error = %q", msg)
	}
	req = caseRequest(t, "mixed")
	req.NodeGroups[1].Labels["server_type"] = "vm"
	if msg := renderErr(t, req); !strings.Contains(msg, "asks for server_type=vm but flavor bm.standard is Ironic-backed (resources:CUSTOM_BAREMETAL_STANDARD=1)") {
		t.Errorf("error = %q", msg)
	}
}

func TestIronicFlavorMakesEachGroupBareMetalInMixedCluster(t *testing.T) {
	res := mustRender(t, caseRequest(t, "mixed"))
	cl := clusterObject(t, res)
	cpType, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "controlPlane", "metadata", "labels", capi.LabelServerType)
	if cpType != "vm" {
		t.Errorf("control plane server type = %q, want vm", cpType)
	}
	md := machineDeployment(t, res, "default-worker")
	if md["class"] != "bm" {
		t.Errorf("worker class = %v, want bm", md["class"])
	}
	nr, _ := capi.ValueOf(cl, "default-worker", "nodeRegistration")
	if !strings.Contains(toJSON(nr), "magnetite.io/server-type=bm") {
		t.Errorf("bare-metal workers lack the server-type node label: %s", toJSON(nr))
	}
	// And the reverse: a bare-metal control plane with VM workers.
	req := caseRequest(t, "mixed")
	req.NodeGroups[0].FlavorID, req.NodeGroups[1].FlavorID = ptr("bm.standard"), ptr("m1.xlarge")
	res = mustRender(t, req)
	specs := machineSpecs(t, res)
	if specs["control-plane"]["configDrive"] != true || specs["default-worker"]["configDrive"] != nil {
		t.Errorf("reverse mix: cp configDrive=%v worker configDrive=%v", specs["control-plane"]["configDrive"], specs["default-worker"]["configDrive"])
	}
}

func TestBareMetalHasNoRootVolumeUnlessAsked(t *testing.T) {
	specs := machineSpecs(t, mustRender(t, caseRequest(t, "bm-only")))
	for g, spec := range specs {
		if _, ok := spec["rootVolume"]; ok {
			t.Errorf("bare-metal group %s has a root volume: %v", g, spec["rootVolume"])
		}
	}
	// A bare-metal node group that asks for one itself gets it.
	specs = machineSpecs(t, mustRender(t, caseRequest(t, "bm-boot-volume")))
	want := map[string]any{"sizeGiB": int64(50), "type": "ssd"}
	if !reflect.DeepEqual(specs["default-worker"]["rootVolume"], want) || specs["control-plane"]["rootVolume"] != nil {
		t.Errorf("root volumes: worker %v (want %v), control plane %v (want none)", specs["default-worker"]["rootVolume"], want, specs["control-plane"]["rootVolume"])
	}
	// A VM template's size is for the virtual machines of a mixed cluster:
	// the bare-metal node group boots from its disks, and is told so.
	res := mustRender(t, caseRequest(t, "mixed-boot-volume"))
	specs = machineSpecs(t, res)
	vmVolume := map[string]any{"sizeGiB": int64(50)}
	if !reflect.DeepEqual(specs["control-plane"]["rootVolume"], vmVolume) || !reflect.DeepEqual(specs["default-worker"]["rootVolume"], vmVolume) {
		t.Errorf("VM root volumes: control plane %v, worker %v; want %v", specs["control-plane"]["rootVolume"], specs["default-worker"]["rootVolume"], vmVolume)
	}
	if v, ok := specs["metal"]["rootVolume"]; ok {
		t.Errorf("the bare-metal node group of a mixed cluster has a root volume: %v", v)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "node group metal is bare metal: boot_volume_size=50 of the template or cluster applies to virtual node groups only") {
		t.Errorf("no warning that the size does not apply to bare metal: %v", res.Warnings)
	}
	// VMs keep the configured default.
	specs = machineSpecs(t, mustRender(t, caseRequest(t, "vm-only")))
	if !reflect.DeepEqual(specs["default-worker"]["rootVolume"], map[string]any{"sizeGiB": int64(20)}) {
		t.Errorf("vm root volume = %v", specs["default-worker"]["rootVolume"])
	}
}

func TestPortSecurityDisabledNetworkDropsSecurityGroups(t *testing.T) {
	res := mustRender(t, caseRequest(t, "port-security-disabled"))
	if sg, ok := infraCluster(t, res)["managedSecurityGroups"]; ok {
		t.Errorf("managed security groups on a port-security-disabled network: %v", sg)
	}
	for g, spec := range machineSpecs(t, res) {
		ports, _ := spec["ports"].([]any)
		if len(ports) != 1 {
			t.Fatalf("group %s ports = %v", g, spec["ports"])
		}
		port := ports[0].(map[string]any)
		if port["enablePortSecurity"] != false || port["securityGroups"] != nil || port["allowedAddressPairs"] != nil {
			t.Errorf("group %s port = %v, want port security off and no security groups or address pairs", g, port)
		}
		if spec["securityGroups"] != nil {
			t.Errorf("group %s has machine security groups", g)
		}
	}
}

func TestManagedSecurityGroupsLabelForcesEitherWay(t *testing.T) {
	req := caseRequest(t, "port-security-disabled")
	req.Cluster.Labels["managed_security_groups"] = "true"
	res := mustRender(t, req)
	if _, ok := infraCluster(t, res)["managedSecurityGroups"]; !ok {
		t.Error("managed_security_groups=true did not keep the security groups")
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "port security is disabled") {
		t.Errorf("no warning about forcing security groups on a port-security-disabled network: %v", res.Warnings)
	}
	req = caseRequest(t, "vm-only")
	req.Cluster.Labels["managed_security_groups"] = "false"
	if _, ok := infraCluster(t, mustRender(t, req))["managedSecurityGroups"]; ok {
		t.Error("managed_security_groups=false kept the security groups")
	}
}

func TestVMClusterKeepsManagedSecurityGroups(t *testing.T) {
	for _, name := range []string{"vm-only", "mixed", "bm-only"} {
		res := mustRender(t, caseRequest(t, name))
		if !reflect.DeepEqual(infraCluster(t, res)["managedSecurityGroups"], map[string]any{"allowAllInClusterTraffic": true}) {
			t.Errorf("%s: managed security groups = %v", name, infraCluster(t, res)["managedSecurityGroups"])
		}
		for g, spec := range machineSpecs(t, res) {
			if spec["ports"] != nil {
				t.Errorf("%s/%s: ports rendered on a port-security network: %v", name, g, spec["ports"])
			}
		}
	}
}

func TestBareMetalPortsHaveNoAllowedAddressPairsAndUseConfigDrive(t *testing.T) {
	for _, name := range []string{"bm-only", "port-security-disabled", "mixed", "several-nodegroups"} {
		res := mustRender(t, caseRequest(t, name))
		types := serverTypes(t, res)
		for g, spec := range machineSpecs(t, res) {
			if strings.Contains(toJSON(spec), "allowedAddressPairs") {
				t.Errorf("%s/%s: allowed address pairs rendered", name, g)
			}
			if bm := types[g] == "bm"; (spec["configDrive"] == true) != bm {
				t.Errorf("%s/%s (%s): configDrive = %v", name, g, types[g], spec["configDrive"])
			}
		}
	}
	req := caseRequest(t, "bm-only")
	req.Cluster.Labels["config_drive"] = "false"
	for g, spec := range machineSpecs(t, mustRender(t, req)) {
		if spec["configDrive"] != nil {
			t.Errorf("config_drive=false ignored for %s", g)
		}
	}
}

// serverTypes maps machine group names (as machineSpecs names them) to
// their server type label.
func serverTypes(t *testing.T, res *driver.Result) map[string]string {
	cl := clusterObject(t, res)
	out := map[string]string{}
	out["control-plane"], _, _ = unstructured.NestedString(cl.Object, "spec", "topology", "controlPlane", "metadata", "labels", capi.LabelServerType)
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	for _, x := range mds {
		md := x.(map[string]any)
		out[md["name"].(string)] = md["class"].(string)
	}
	return out
}

func TestAutoscalerEphemeralDiskIsTheRootDisk(t *testing.T) {
	res := mustRender(t, caseRequest(t, "autoscaling"))
	vm := machineDeployment(t, res, "default-worker")
	metal := machineDeployment(t, res, "metal")
	ann := func(md map[string]any) map[string]any {
		a, _, _ := unstructured.NestedMap(md, "metadata", "annotations")
		return a
	}
	if ann(vm)["capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk"] != "20Gi" {
		t.Errorf("vm ephemeral-disk = %v", ann(vm)["capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk"])
	}
	// Nova boots an image only on a flavor with a root disk, which is then
	// the node's ephemeral storage.
	if v := ann(metal)["capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk"]; v != "480Gi" {
		t.Errorf("bare-metal group on a 480 GiB flavor without a root volume has ephemeral-disk %v", v)
	}
	if ann(metal)["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] != "0" ||
		ann(metal)["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] != "4" {
		t.Errorf("metal bounds = %v", ann(metal))
	}
	for _, md := range []map[string]any{vm, metal} {
		if _, ok := md["replicas"]; ok {
			t.Errorf("%v: replicas set while the autoscaler owns the size", md["name"])
		}
	}
	// Without autoscaling, replicas are set and annotations absent.
	md := machineDeployment(t, mustRender(t, caseRequest(t, "vm-only")), "default-worker")
	if md["replicas"] != int64(2) || ann(md) != nil {
		t.Errorf("vm-only worker: replicas=%v annotations=%v", md["replicas"], ann(md))
	}
}

func TestBareMetalGetsLongerTimeoutsAndInPlaceRollouts(t *testing.T) {
	res := mustRender(t, caseRequest(t, "mixed"))
	cl := clusterObject(t, res)
	cpStartup, _, _ := unstructured.NestedInt64(cl.Object, "spec", "topology", "controlPlane", "healthCheck", "checks", "nodeStartupTimeoutSeconds")
	md := machineDeployment(t, res, "default-worker")
	bmStartup, _, _ := unstructured.NestedInt64(md, "healthCheck", "checks", "nodeStartupTimeoutSeconds")
	if cpStartup != int64((10*time.Minute).Seconds()) || bmStartup != int64((45*time.Minute).Seconds()) {
		t.Errorf("startup timeouts vm=%d bm=%d", cpStartup, bmStartup)
	}
	surge, _, _ := unstructured.NestedInt64(md, "rollout", "strategy", "rollingUpdate", "maxSurge")
	unavailable, _, _ := unstructured.NestedInt64(md, "rollout", "strategy", "rollingUpdate", "maxUnavailable")
	if surge != 0 || unavailable != 1 {
		t.Errorf("bare-metal rollout surge=%d unavailable=%d, want 0/1", surge, unavailable)
	}
	// A label sets the timeout per node group.
	gpu := machineDeployment(t, mustRender(t, caseRequest(t, "several-nodegroups")), "gpu")
	if s, _, _ := unstructured.NestedInt64(gpu, "healthCheck", "checks", "nodeStartupTimeoutSeconds"); s != 3600 {
		t.Errorf("gpu node_startup_timeout = %d", s)
	}
	// auto_healing_enabled=false disables the health checks.
	req := caseRequest(t, "mixed")
	req.Cluster.Labels["auto_healing_enabled"] = "false"
	md = machineDeployment(t, mustRender(t, req), "default-worker")
	if !reflect.DeepEqual(md["healthCheck"], map[string]any{"enabled": false}) {
		t.Errorf("health check with auto-healing off = %v", md["healthCheck"])
	}
}

func TestUpgradeChangesOnlyTheVersion(t *testing.T) {
	before := document(t, mustRender(t, caseRequest(t, "vm-only")))
	after := document(t, mustRender(t, caseRequest(t, "vm-only-upgraded")))
	diff := changedLines(string(before), string(after))
	want := [][2]string{{"    version: v1.33.1", "    version: v1.33.4"}}
	if !reflect.DeepEqual(diff, want) {
		t.Errorf("patch upgrade changed %v, want only %v", diff, want)
	}
	// A minor upgrade also moves the addons to the new minor's pinned
	// charts; the objects name the same addon ConfigMaps, whose content
	// the conductor renders from those charts.
	req := caseRequest(t, "vm-only")
	req.Cluster.Labels["kube_tag"] = "v1.34.2"
	res, err := osDriver.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	diff = nil
	for _, d := range changedLines(string(before), string(document(t, res))) {
		if !strings.HasPrefix(d[0], "# addon ") { // the summary lists the releases, checked below
			diff = append(diff, d)
		}
	}
	if want := [][2]string{{"    version: v1.33.1", "    version: v1.34.2"}}; !reflect.DeepEqual(diff, want) {
		t.Errorf("minor upgrade changed %v, want only %v", diff, want)
	}
	old, err := osDriver.Render(caseRequest(t, "vm-only"))
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Addons) == 0 || len(old.Addons) != len(res.Addons) {
		t.Fatalf("addon releases before %d, after %d", len(old.Addons), len(res.Addons))
	}
	for i, rel := range res.Addons {
		pin, _ := addons.Pinned(rel.Addon, "1.34")
		if !reflect.DeepEqual(rel.Pin, pin) || rel.KubeVersion != "v1.34.2" {
			t.Errorf("after the upgrade %s is pinned to %+v, want the 1.34 pin %+v", rel.Addon, rel.Pin, pin)
		}
		if was, _ := addons.Pinned(rel.Addon, "1.33"); !reflect.DeepEqual(old.Addons[i].Pin, was) {
			t.Errorf("before the upgrade %s is pinned to %+v, want the 1.33 pin", rel.Addon, old.Addons[i].Pin)
		}
	}
}

func changedLines(a, b string) [][2]string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out [][2]string
	if len(al) != len(bl) {
		return [][2]string{{"line count", "differs"}}
	}
	for i := range al {
		if al[i] != bl[i] {
			out = append(out, [2]string{al[i], bl[i]})
		}
	}
	return out
}

func TestClusterClassIsNamedByItsContent(t *testing.T) {
	name := func(d *capi.Driver, req driver.Request) string {
		res, err := d.Render(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Objects {
			if o.GetKind() == "ClusterClass" {
				return o.GetName()
			}
		}
		return ""
	}
	req := caseRequest(t, "vm-only")
	a := name(osDriver, req)
	if b := name(openstack.New(capi.Options{DefaultBootVolumeSize: 20}), caseRequest(t, "mixed")); a != b {
		t.Errorf("two clusters of one configuration got classes %s and %s", a, b)
	}
	if c := name(openstack.New(capi.Options{BMNodeStartupTimeout: time.Hour}), req); c == a || !strings.HasPrefix(c, "magnetite-openstack-ubuntu-") {
		t.Errorf("changing the class content kept the name %s (or named it %s)", a, c)
	}
	if f := name(osDriver, caseRequest(t, "os-flatcar")); !strings.HasPrefix(f, "magnetite-openstack-flatcar-") {
		t.Errorf("flatcar class = %s", f)
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	for _, c := range loadCases(t) {
		for _, v := range driverFor(c.Driver).InfrastructureVersions() {
			a, b := document(t, render(t, c, v)), document(t, render(t, c, v))
			if string(a) != string(b) {
				t.Errorf("%s renders differently twice at %s", c.Name, v)
			}
		}
	}
}

func TestUnknownLabelsAreKeptAndReported(t *testing.T) {
	req := caseRequest(t, "vm-only")
	req.Cluster.Labels["team"] = "web"
	res := mustRender(t, req)
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "labels team are not known to Magnetite") {
		t.Errorf("warnings = %v", res.Warnings)
	}
	if req.Cluster.Labels["team"] != "web" {
		t.Error("the unknown label was dropped from the cluster")
	}
}

func TestInvalidRequestsNameWhatToFix(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*driver.Request)
		want   string
	}{
		{"bad label", func(r *driver.Request) { r.Cluster.Labels["boot_volume_size"] = "big" }, `label boot_volume_size="big" is invalid: expected a whole number of GiB >= 0`},
		{"template-scope label on cluster", func(r *driver.Request) { r.Cluster.Labels["calico_tag"] = "v3.99.0" }, "calico_tag can only be set on the template"},
		{"even control plane", func(r *driver.Request) { r.NodeGroups[0].NodeCount = 2 }, "master_count 2 is not valid"},
		{"no version", func(r *driver.Request) {
			delete(r.Cluster.Labels, "kube_tag")
			delete(r.Template.Labels, "kube_tag")
			r.Facts.Images[0].Properties = nil
		}, "the Kubernetes version is unknown"},
		{"unknown flavor", func(r *driver.Request) { r.NodeGroups[1].FlavorID = ptr("m9.huge") }, "flavor m9.huge was not found in the cloud"},
		{"unsupported os", func(r *driver.Request) { r.Facts.Images[0].Properties["os_distro"] = "fedora-coreos" }, `os_distro "fedora-coreos" is not supported`},
		{"flannel", func(r *driver.Request) { r.Template.NetworkDriver = ptr("flannel") }, "network_driver flannel is not supported"},
		{"bad extra_files", func(r *driver.Request) {
			r.Cluster.Labels["extra_files"] = "- path: /x\n  content: IyEvYmluL3NoCmVjaG8gaGVsbG8K\n"
		}, "already base64-encoded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := caseRequest(t, "vm-only")
			c.mutate(&req)
			if msg := renderErr(t, req); !strings.Contains(msg, c.want) {
				t.Errorf("error %q should contain %q", msg, c.want)
			}
		})
	}
}

// TestObjectsAreRenderedAtTheServedVersions: the request says at which
// apiVersion the management cluster serves each kind, and the renderer
// writes its objects at those versions or refuses the ones whose shape it
// does not write.
func TestObjectsAreRenderedAtTheServedVersions(t *testing.T) {
	req := caseRequest(t, "vm-only")
	req.APIVersions = map[string]string{"Cluster": "cluster.x-k8s.io/v1beta1"}
	_, err := osDriver.Render(req)
	if err == nil || !strings.Contains(err.Error(), "cluster.x-k8s.io/v1beta1 is not supported") {
		t.Errorf("err = %v", err)
	}
	for _, o := range mustRender(t, caseRequest(t, "vm-only")).Objects {
		if o.GetKind() != "ConfigMap" && !strings.HasSuffix(o.GetAPIVersion(), "/v1beta2") {
			t.Errorf("%s rendered as %s", o.GetKind(), o.GetAPIVersion())
		}
	}
}

// TestInfrastructureVersionIsTheClustersOwnProviders: with several
// infrastructure providers installed at different versions, a cluster is
// rendered at the version its own provider is served at, whichever other
// provider shares the API group.
func TestInfrastructureVersionIsTheClustersOwnProviders(t *testing.T) {
	served := map[string]string{
		"Cluster":                  "cluster.x-k8s.io/v1beta2",
		"OpenStackClusterTemplate": "infrastructure.cluster.x-k8s.io/v1beta2",
		"DevClusterTemplate":       "infrastructure.cluster.x-k8s.io/v1beta1",
		"Metal3ClusterTemplate":    "infrastructure.cluster.x-k8s.io/v1beta1",
	}
	req := caseRequest(t, "vm-only")
	req.APIVersions = served
	if _, err := osDriver.Render(req); err != nil {
		t.Errorf("OpenStack served at v1beta2 beside CAPD at v1beta1: %v", err)
	}
	mem := inmemory.New(capi.Options{}, inmemory.Options{})
	if _, err := mem.Render(req); err == nil || !strings.Contains(err.Error(), "infrastructure.cluster.x-k8s.io/v1beta1 is not supported") {
		t.Errorf("in-memory cluster with CAPD served at v1beta1: err = %v, want the infrastructure version refused", err)
	}
}

// TestInMemoryClustersGetAddonsOnlyWhenAsked: an in-memory cluster asking
// for k8s-keystone-auth and Manila gets no addons by default, and with
// inmemory_addons the same releases and ClusterResourceSet a cloud's
// cluster gets (Manila after the NFS driver it hands mounts to).
func TestInMemoryClustersGetAddonsOnlyWhenAsked(t *testing.T) {
	req := caseRequest(t, "vm-only")
	req.Template.Labels["keystone_auth_enabled"] = "true"
	req.Template.Labels["manila_csi_enabled"] = "true"
	req.Template.Labels["manila_csi_share_network_id"] = "4f1b6a8e-2c1d-4e59-9a3b-7d2e5c0f8a61"
	addonsOf := func(d *capi.Driver) (names []string, sets int) {
		t.Helper()
		res, err := d.Render(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Addons {
			names = append(names, r.Addon)
		}
		for _, o := range res.Objects {
			if o.GetKind() == "ClusterResourceSet" {
				sets++
			}
		}
		return names, sets
	}
	if names, sets := addonsOf(inmemory.New(capi.Options{}, inmemory.Options{})); len(names) != 0 || sets != 0 {
		t.Errorf("in-memory cluster without inmemory_addons: addons %v, %d ClusterResourceSets", names, sets)
	}
	names, sets := addonsOf(inmemory.New(capi.Options{}, inmemory.Options{Addons: true}))
	for _, want := range []string{"k8s-keystone-auth", "csi-driver-nfs", "manila-csi"} {
		if !slices.Contains(names, want) {
			t.Errorf("in-memory cluster with inmemory_addons: addons %v lack %s", names, want)
		}
	}
	if i, j := slices.Index(names, "csi-driver-nfs"), slices.Index(names, "manila-csi"); i > j {
		t.Errorf("addons %v: Manila before the NFS driver", names)
	}
	if sets != 1 {
		t.Errorf("in-memory cluster with inmemory_addons: %d ClusterResourceSets, want 1", sets)
	}
}

// TestObjectsCarryTheRequestsLabels: every rendered object carries the
// ownership labels of the request, and the topology of the Cluster carries
// them with each node group's UUID, on the machine deployment made for
// that very node group (whatever order the node groups come in), so that
// Cluster API stamps them on the machines.
func TestObjectsCarryTheRequestsLabels(t *testing.T) {
	req := caseRequest(t, "several-nodegroups")
	req.Labels = map[string]string{"app.kubernetes.io/managed-by": "magnetite", "magnetite.io/cluster-uuid": req.Cluster.UUID}
	byName := map[string]string{}
	for i, ng := range req.NodeGroups {
		ng.UUID = fmt.Sprintf("ng-%d", i)
		byName[driver.DNSLabel(ng.Name, 40)] = ng.UUID // the machine deployment's name
	}
	// Node groups reach the driver in the store's order, which need not
	// be the order the machine deployments are rendered in.
	slices.Reverse(req.NodeGroups)
	res := mustRender(t, req)
	for _, o := range res.Objects {
		for k, v := range req.Labels {
			if o.GetLabels()[k] != v {
				t.Errorf("%s %s: label %s = %q, want %q", o.GetKind(), o.GetName(), k, o.GetLabels()[k], v)
			}
		}
	}
	cl := clusterObject(t, res)
	check := func(what string, meta map[string]any, ng string) {
		labels, _, _ := unstructured.NestedStringMap(meta, "metadata", "labels")
		if labels[driver.LabelNodeGroupUUID] != byName[ng] {
			t.Errorf("%s: %s = %q, want node group %s's %q", what, driver.LabelNodeGroupUUID, labels[driver.LabelNodeGroupUUID], ng, byName[ng])
		}
		for k, v := range req.Labels {
			if labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", what, k, labels[k], v)
			}
		}
	}
	cp, _, _ := unstructured.NestedMap(cl.Object, "spec", "topology", "controlPlane")
	check("control plane", cp, model.DefaultMasterNodeGroup)
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	if len(mds) != len(req.NodeGroups)-1 {
		t.Fatalf("%d machine deployments for %d worker node groups", len(mds), len(req.NodeGroups)-1)
	}
	for _, raw := range mds {
		md := raw.(map[string]any)
		check("machine deployment "+md["name"].(string), md, md["name"].(string))
	}
}

func TestExtraFilesReachEveryNode(t *testing.T) {
	res := mustRender(t, caseRequest(t, "several-nodegroups"))
	preview, err := capi.Preview(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, o := range preview {
		var files []any
		switch o.GetKind() {
		case "KubeadmControlPlaneTemplate":
			files, _, _ = unstructured.NestedSlice(o.Object, "spec", "template", "spec", "kubeadmConfigSpec", "files")
		case "KubeadmConfigTemplate":
			files, _, _ = unstructured.NestedSlice(o.Object, "spec", "template", "spec", "files")
		default:
			continue
		}
		if !strings.Contains(toJSON(files), "/etc/sysctl.d/90-magnetite.conf") {
			t.Errorf("%s lacks the extra file: %s", o.GetName(), toJSON(files))
		}
		seen++
	}
	if seen != 5 {
		t.Errorf("checked %d bootstrap templates, want 5 (control plane and four worker groups)", seen)
	}
}

func TestNodeGroupTaintsAndLabelsReachKubeadm(t *testing.T) {
	cl := clusterObject(t, mustRender(t, caseRequest(t, "several-nodegroups")))
	nr, _ := capi.ValueOf(cl, "gpu", "nodeRegistration")
	j := toJSON(nr)
	for _, want := range []string{`"key":"nvidia.com/gpu"`, `"effect":"NoSchedule"`, "accelerator=nvidia", "magnetite.io/server-type=bm"} {
		if !strings.Contains(j, want) {
			t.Errorf("gpu nodeRegistration lacks %s: %s", want, j)
		}
	}
	cp, _ := capi.ValueOf(cl, "", "nodeRegistration")
	if !strings.Contains(toJSON(cp), "node-role.kubernetes.io/control-plane") {
		t.Errorf("control plane lost its taint: %s", toJSON(cp))
	}
}

// TestKindsDeclareTheVersionsTheDriverWrites: discovery prefers, and doctor
// requires, the versions each infrastructure writes its kinds at; Metal3's
// per-cluster kinds follow its cluster template's version, and a kind an
// infrastructure only reads keeps whatever it declares.
func TestKindsDeclareTheVersionsTheDriverWrites(t *testing.T) {
	versions := map[string][]string{}
	for _, d := range []*capi.Driver{openstack.New(capi.Options{}), metal3.New(capi.Options{}, metal3.Options{})} {
		for _, k := range d.Kinds() {
			versions[k.Kind] = k.Versions
			if len(k.Versions) > 0 && !strings.Contains(k.Releases, "v1beta1") {
				t.Errorf("%s names no releases: %q", k.Kind, k.Releases)
			}
		}
	}
	for _, kind := range []string{"OpenStackClusterTemplate", "OpenStackMachine", "Metal3MachineTemplate", "Metal3DataTemplate", "Metal3RemediationTemplate"} {
		if got := strings.Join(versions[kind], ","); got != "v1beta2,v1beta1" {
			t.Errorf("%s is written at %q, want v1beta2 then v1beta1", kind, got)
		}
	}
	for _, kind := range []string{"BareMetalHost", "IPPool"} {
		if len(versions[kind]) != 0 {
			t.Errorf("%s, of another group, got the infrastructure's versions %v", kind, versions[kind])
		}
	}
}
