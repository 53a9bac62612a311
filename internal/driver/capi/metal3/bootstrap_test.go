package metal3_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/testing/testbootstrap"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// TestMetal3ControlPlaneBootsTheCloudConfigClusterAPIWrites applies a Metal3
// cluster, at each Kubernetes version testbootstrap has a kubeadm of, to
// an API server running Cluster API's core, kubeadm bootstrap and control
// plane managers with CAPM3 v1.13.2's CRDs, plays CAPM3's part for the
// Metal3Cluster (provisioned; its endpoint is kube-vip's address, which
// Magnetite renders) and reads the bootstrap data the bootstrap provider
// writes for the first control-plane machine as the host boots it:
// Debian's cloud-init renders the cloud-config with the metadata CAPM3
// renders for the host and Ironic puts on its config drive (the keys of
// Magnetite's Metal3DataTemplate, which name the machine, and the
// providerid CAPM3 adds), and the kubeadm of the cluster's version
// validates the configuration cloud-init writes. The node must register
// under its machine's name with the provider ID CAPM3 gives the machine,
// metal3://<namespace>/<host>/<Metal3Machine> (baremetal/
// metal3data_manager.go, renderMetaData, v1.12.7 and v1.13.2).
func TestMetal3ControlPlaneBootsTheCloudConfigClusterAPIWrites(t *testing.T) {
	ctx, dc, mapper := managementCluster(t, testenv.CAPM3v113)
	ns := testenv.GoldenNamespace
	var clusters []string
	for i, version := range testbootstrap.KubeadmVersions {
		req := goldenCases(t)["control-plane-and-workers"]
		name := "boot-" + strings.ReplaceAll(version, ".", "-")
		req.Cluster.Name, req.Cluster.StackID = name, &name
		req.Cluster.UUID = fmt.Sprintf("%s%04x", req.Cluster.UUID[:len(req.Cluster.UUID)-4], 0xb00+i)
		testbootstrap.SetLabels(req, map[string]string{"kube_tag": version})
		res := render(t, req, "v1beta2")
		var clusterName string
		for _, o := range res.Objects {
			if _, err := testenv.ServerSideApply(ctx, dc, mapper, o, false); err != nil {
				t.Fatalf("%s: apply %s %s: %v", version, o.GetKind(), o.GetName(), err)
			}
			if o.GetKind() == "Cluster" {
				clusterName = o.GetName()
			}
		}
		clusters = append(clusters, clusterName)
	}
	for i, version := range testbootstrap.KubeadmVersions {
		cluster := clusters[i]
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testbootstrap.ProvisionInfrastructure(t, dc, mapper, ns, cluster, "")
			machine, format, value := testbootstrap.FirstControlPlane(t, dc, mapper, ns, cluster)
			if format != "cloud-config" {
				t.Fatalf("bootstrap format %q, want cloud-config", format)
			}
			m3m, _, _ := unstructured.NestedString(machine.Object, "spec", "infrastructureRef", "name")
			providerID := ns + "/worker-rack1-07/" + m3m
			metaData := map[string]string{"providerid": providerID}
			for _, k := range []string{"name", "local-hostname", "local_hostname"} {
				metaData[k] = machine.GetName()
			}
			doc := testbootstrap.Parse(t, testbootstrap.CloudConfig(t, value, testbootstrap.Instance{
				Hostname: machine.GetName(), ID: "3f8a9c2e-1b7d-4e6f-a5c4-9d8e7f6a5b4c", MetaData: metaData}))
			command, config := doc.KubeadmConfig(t)
			if command != "init" {
				t.Errorf("the first control-plane node runs kubeadm %s, want init", command)
			}
			if err := testbootstrap.ValidateKubeadm(t, version, config); err != nil {
				t.Errorf("%v\n%s", err, config)
			}
			name, args := testbootstrap.NodeRegistration(t, config, command)
			if name != machine.GetName() {
				t.Errorf("kubeadm would register node %q, want the machine's name %q\n%s", name, machine.GetName(), config)
			}
			if got := testbootstrap.KubeletArg(args["provider-id"]); got != "metal3://"+providerID {
				t.Errorf("kubelet's provider ID %q, want CAPM3's metal3://%s\n%s", args["provider-id"], providerID, config)
			}
		})
	}
}
