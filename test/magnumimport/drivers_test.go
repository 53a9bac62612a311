package magnumimport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/magnetite-io/magnetite/internal/testing/testcloud"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testkeystone"
)

// The Cluster API objects of a cluster as the two Magnum Cluster API
// drivers make them, with what the adoption depends on (namespaces, names,
// labels, which object owns which field, the Helm release record) as
// those drivers write it, and their specs cut down to what the CAPO
// stand-in and Cluster API need to build the machines. The drivers write
// Cluster API's own kinds at v1beta1; they are written here in the v1beta2
// shape Cluster API v1.14 converts them to and stores (the test's API
// server runs no conversion webhook). CAPO v0.14.7 serves v1beta1 only.

// driverCluster is one cluster a Magnum driver made.
type driverCluster struct {
	uuid, stackID, namespace string
	// cloud is the clouds.yaml the driver wrote for CAPO: an application
	// credential of the cluster's project.
	credID, credSecret, authURL string
	workers                     int
}

const (
	// mcaClass is magnum-cluster-api v0.38.1's ClusterClass, named after its
	// release (src/lib.rs CLUSTER_CLASS_NAME), with its templates of the
	// same name in magnum-system (src/driver.rs apply_cluster_class).
	mcaClass     = "magnum-v0.38.1"
	mcaNamespace = "magnum-system"
	// mchChart is the capi-helm-charts openstack-cluster release the
	// magnum-capi-helm clusters were installed from.
	mchChartVersion = "0.27.0"
)

// mcaObjects are magnum-cluster-api v0.38.1's objects for one cluster and
// its ClusterClass:
//   - the ClusterClass and its four templates (src/driver.rs
//     apply_cluster_class); of its variables and patches, those of the
//     identity, flavors and image (src/features/cluster_identity.rs,
//     flavors.rs, images.rs), which set the same template fields;
//   - the cloud-config Secret, named "<stack_id>-cloud-config"
//     (magnum_cluster_api/utils.py get_cluster_api_cloud_config_secret_name);
//   - the Cluster, named by stack_id, with a managed topology whose
//     machine deployments are named after the node groups and labelled as
//     mutate_machine_deployment labels them (magnum_cluster_api/resources.py
//     Cluster.get_object). Every object of the cluster carries MCA's
//     cluster-uuid label (ClusterBase.labels).
func mcaObjects(c driverCluster) string {
	return fmt.Sprintf(`
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackClusterTemplate
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  template:
    spec:
      identityRef: {name: PLACEHOLDER, cloudName: default}
      apiServerLoadBalancer: {enabled: true}
      externalNetwork: {id: %[3]s}
      network: {id: %[4]s}
      managedSecurityGroups: {allowAllInClusterTraffic: true}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  template:
    spec:
      flavor: PLACEHOLDER
      identityRef: {name: PLACEHOLDER, cloudName: default}
      image: {id: 00000000-0000-0000-0000-000000000000}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlaneTemplate
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  template:
    spec:
      kubeadmConfigSpec:
        initConfiguration: {nodeRegistration: {name: '{{ local_hostname }}'}}
        joinConfiguration: {nodeRegistration: {name: '{{ local_hostname }}'}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfigTemplate
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  template:
    spec:
      joinConfiguration: {nodeRegistration: {name: '{{ local_hostname }}'}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  infrastructure:
    templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: OpenStackClusterTemplate, name: %[1]s}
  controlPlane:
    templateRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlaneTemplate, name: %[1]s}
    machineInfrastructure:
      templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: OpenStackMachineTemplate, name: %[1]s}
  workers:
    machineDeployments:
    - class: default-worker
      bootstrap:
        templateRef: {apiVersion: bootstrap.cluster.x-k8s.io/v1beta2, kind: KubeadmConfigTemplate, name: %[1]s}
      infrastructure:
        templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: OpenStackMachineTemplate, name: %[1]s}
  variables:
  - {name: clusterIdentityRefName, required: true, schema: {openAPIV3Schema: {type: string}}}
  - {name: controlPlaneFlavor, required: true, schema: {openAPIV3Schema: {type: string}}}
  - {name: flavor, required: true, schema: {openAPIV3Schema: {type: string}}}
  - {name: imageUUID, required: true, schema: {openAPIV3Schema: {type: string}}}
  patches:
  - name: clusterIdentityRefName
    definitions:
    - selector: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: OpenStackClusterTemplate, matchResources: {infrastructureCluster: true}}
      jsonPatches: [{op: replace, path: /spec/template/spec/identityRef/name, valueFrom: {variable: clusterIdentityRefName}}]
    - selector: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: OpenStackMachineTemplate, matchResources: {controlPlane: true, machineDeploymentClass: {names: [default-worker]}}}
      jsonPatches: [{op: replace, path: /spec/template/spec/identityRef/name, valueFrom: {variable: clusterIdentityRefName}}]
  - name: flavors
    definitions:
    - selector: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: OpenStackMachineTemplate, matchResources: {controlPlane: true}}
      jsonPatches: [{op: replace, path: /spec/template/spec/flavor, valueFrom: {variable: controlPlaneFlavor}}]
    - selector: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: OpenStackMachineTemplate, matchResources: {machineDeploymentClass: {names: [default-worker]}}}
      jsonPatches: [{op: replace, path: /spec/template/spec/flavor, valueFrom: {variable: flavor}}]
  - name: images
    definitions:
    - selector: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: OpenStackMachineTemplate, matchResources: {controlPlane: true, machineDeploymentClass: {names: [default-worker]}}}
      jsonPatches: [{op: replace, path: /spec/template/spec/image/id, valueFrom: {variable: imageUUID}}]
---
apiVersion: v1
kind: Secret
metadata:
  name: %[5]s-cloud-config
  namespace: %[2]s
  labels: {cluster-uuid: %[6]s}
stringData:
  clouds.yaml: |
%[7]s
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: %[5]s
  namespace: %[2]s
  labels: {cluster-uuid: %[6]s}
spec:
  clusterNetwork:
    serviceDomain: cluster.local
    pods: {cidrBlocks: [10.100.0.0/16]}
    services: {cidrBlocks: [10.254.0.0/16]}
  topology:
    classRef: {name: %[1]s}
    version: %[8]s
    controlPlane:
      metadata: {labels: {node-role.kubernetes.io/master: ""}}
      replicas: 1
    workers:
      machineDeployments:
      - class: default-worker
        name: default-worker
        replicas: %[9]d
        metadata:
          labels: {node-role.kubernetes.io/worker: "", node.cluster.x-k8s.io/nodegroup: default-worker}
        variables:
          overrides:
          - {name: flavor, value: %[10]s}
          - {name: imageUUID, value: %[11]s}
    variables:
    - {name: clusterIdentityRefName, value: %[5]s-cloud-config}
    - {name: controlPlaneFlavor, value: %[12]s}
    - {name: flavor, value: %[10]s}
    - {name: imageUUID, value: %[11]s}
`, mcaClass, c.namespace, testcloud.ExternalNetID, testcloud.PrivateNetID, c.stackID, c.uuid,
		indent(cloudsYAML(c, "default"), 4), testcloud.KubeTag, c.workers, testcloud.FlavorName, testcloud.ImageID,
		testcloud.MasterFlavor)
}

// mchObjects are the objects the capi-helm-charts openstack-cluster chart
// (0.27.0) renders for a magnum-capi-helm 1.4.0 cluster: release named by
// the stack_id, in "magnum-<project>" (driver_utils.py chart_release_name,
// cluster_namespace); one node group, default-worker
// (driver.py _process_node_groups). Names and labels follow the chart's
// templates/_helpers.tpl (componentName, componentLabels,
// cloudCredentialsSecretName) and its templates for the Cluster, the
// OpenStackCluster, the control plane and the node group, including which
// objects it marks helm.sh/resource-policy: keep; the machine and config
// templates carry a checksum of their spec in their names, as the chart's
// *.mt.name and *.kct.name helpers do. Helm adds its managed-by label and
// release annotations to each (pkg/action/install.go).
func mchObjects(c driverCluster) string {
	rel := c.stackID
	// meta is the labels and annotations of an object of the release: the
	// chart's for its component (and node group), Helm's, and the chart's
	// keep policy where it sets one.
	meta := func(component string, keep bool) string {
		labels := componentLabel(component)
		if component == "worker" {
			labels += "\n    capi.stackhpc.com/node-group: default-worker"
		}
		m := fmt.Sprintf(`
  labels:
    app.kubernetes.io/managed-by: Helm
    helm.sh/chart: openstack-cluster-%s
    capi.stackhpc.com/managed-by: Helm
    capi.stackhpc.com/infrastructure-provider: openstack
    capi.stackhpc.com/cluster: %s%s
  annotations:
    meta.helm.sh/release-name: %s
    meta.helm.sh/release-namespace: %s`, mchChartVersion, rel, labels, rel, c.namespace)
		if keep {
			m += "\n    helm.sh/resource-policy: keep"
		}
		return m
	}
	cpMachine := fmt.Sprintf("flavor: %s\n      identityRef: {name: %s-cloud-credentials, cloudName: openstack}\n      image: {id: %s}",
		testcloud.MasterFlavor, rel, testcloud.ImageID)
	workerMachine := fmt.Sprintf("flavor: %s\n      identityRef: {name: %s-cloud-credentials, cloudName: openstack}\n      image: {id: %s}",
		testcloud.FlavorName, rel, testcloud.ImageID)
	workerConfig := "joinConfiguration: {nodeRegistration: {name: '{{ local_hostname }}'}}"
	cpMT, workerMT, workerKCT := rel+"-control-plane-"+checksum(cpMachine), rel+"-default-worker-"+checksum(workerMachine), rel+"-default-worker-"+checksum(workerConfig)
	return fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata:
  name: %[1]s-cloud-credentials
  namespace: %[2]s%[3]s
stringData:
  clouds.yaml: |
%[4]s
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackCluster
metadata:
  name: %[1]s
  namespace: %[2]s%[5]s
spec:
  identityRef: {name: %[1]s-cloud-credentials, cloudName: openstack}
  apiServerLoadBalancer: {enabled: true}
  externalNetwork: {id: %[6]s}
  network: {id: %[7]s}
  managedSecurityGroups: {allowAllInClusterTraffic: true}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: %[1]s
  namespace: %[2]s%[18]s
spec:
  clusterNetwork:
    pods: {cidrBlocks: [172.16.0.0/13]}
    services: {cidrBlocks: [172.24.0.0/13]}
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: %[1]s-control-plane}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: OpenStackCluster, name: %[1]s}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata:
  name: %[8]s
  namespace: %[2]s%[9]s
spec:
  template:
    spec:
      %[10]s
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlane
metadata:
  name: %[1]s-control-plane
  namespace: %[2]s%[9]s
spec:
  version: %[11]s
  replicas: 1
  machineTemplate:
    metadata:
      labels: {capi.stackhpc.com/cluster: %[1]s, capi.stackhpc.com/component: control-plane}
    spec:
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: OpenStackMachineTemplate, name: %[8]s}
  kubeadmConfigSpec:
    initConfiguration: {nodeRegistration: {name: '{{ local_hostname }}'}}
    joinConfiguration: {nodeRegistration: {name: '{{ local_hostname }}'}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata:
  name: %[12]s
  namespace: %[2]s%[13]s
spec:
  template:
    spec:
      %[14]s
---
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfigTemplate
metadata:
  name: %[15]s
  namespace: %[2]s%[13]s
spec:
  template:
    spec:
      %[16]s
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: %[1]s-default-worker
  namespace: %[2]s%[19]s
spec:
  clusterName: %[1]s
  replicas: %[17]d
  selector:
    matchLabels:
      capi.stackhpc.com/cluster: %[1]s
      capi.stackhpc.com/component: worker
      capi.stackhpc.com/node-group: default-worker
      cluster.x-k8s.io/cluster-name: %[1]s
  template:
    metadata:
      labels:
        capi.stackhpc.com/cluster: %[1]s
        capi.stackhpc.com/component: worker
        capi.stackhpc.com/node-group: default-worker
    spec:
      clusterName: %[1]s
      version: %[11]s
      bootstrap:
        configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfigTemplate, name: %[15]s}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: OpenStackMachineTemplate, name: %[12]s}
`, rel, c.namespace, meta("cloud-credentials", true), indent(cloudsYAML(c, "openstack"), 4), meta("", true),
		testcloud.ExternalNetID, testcloud.PrivateNetID, cpMT, meta("control-plane", true), cpMachine, testcloud.KubeTag,
		workerMT, meta("worker", true), workerMachine, workerKCT, workerConfig, c.workers, meta("", false), meta("worker", false))
}

func componentLabel(component string) string {
	if component == "" {
		return ""
	}
	return "\n    capi.stackhpc.com/component: " + component
}

func checksum(spec string) string {
	sum := sha256.Sum256([]byte(spec))
	return hex.EncodeToString(sum[:])[:8]
}

// cloudsYAML is the clouds.yaml each driver writes for CAPO, under the
// cloud name it uses.
func cloudsYAML(c driverCluster, cloud string) string {
	return fmt.Sprintf("clouds:\n  %s:\n    auth:\n      auth_url: %s\n      application_credential_id: %s\n      application_credential_secret: %s\n    auth_type: v3applicationcredential\n    region_name: %s\n",
		cloud, c.authURL, c.credID, c.credSecret, testkeystone.Region)
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
}

// createAsDriver creates objects the way the drivers do, by POST under
// their own field manager (Helm's and pykube's creates), so that Magnetite
// owns none of their fields when it adopts them.
func createAsDriver(ctx context.Context, t *testing.T, dc dynamic.Interface, mapper meta.RESTMapper, manager, yaml string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.DecodeObjects(strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("%s's objects: %v", manager, err)
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		if _, err := dc.Resource(m.Resource).Namespace(o.GetNamespace()).Create(ctx, o, metav1.CreateOptions{FieldManager: manager}); err != nil {
			t.Fatalf("create %s %s/%s as %s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), manager, err)
		}
	}
	return objs
}

// recordHelmRelease keeps the release as Helm does after installing it: a
// Secret sh.helm.release.v1.<name>.v1 labelled owner=helm, through Helm's
// own storage driver.
func recordHelmRelease(t *testing.T, cfg *rest.Config, namespace, name, manifest string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := driver.NewSecrets(cs.CoreV1().Secrets(namespace))
	rel := &release.Release{Name: name, Namespace: namespace, Version: 1, Manifest: manifest,
		Info:  &release.Info{Status: release.StatusDeployed},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "openstack-cluster", Version: mchChartVersion, APIVersion: "v2"}}}
	if err := d.Create(fmt.Sprintf("sh.helm.release.v1.%s.v1", name), rel); err != nil {
		t.Fatalf("record Helm release %s/%s: %v", namespace, name, err)
	}
}
