package openstack_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver/capi/openstack"
	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// v1beta2Objects are OpenStack objects in v1beta2's shape that use every
// field CAPO's docs/book/src/topics/crd-changes/v1beta1-to-v1beta2.md (tag
// v0.15.0-beta.0) says differs in v1beta1, and v1beta1Objects the same
// objects as v1beta1 writes them, each field name read from CAPO
// v0.14.7's CRDs. The golden renders use only some of these fields (no
// template asks for an API server port, a fixed IP or router IPs yet).
const v1beta2Objects = `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: OpenStackClusterTemplate
metadata: {name: managed-network}
spec:
  template:
    spec:
      identityRef: {type: Secret, name: c-cloud-config, cloudName: openstack}
      apiServer:
        managedLoadBalancer: {enabled: true, allowedCIDRs: [192.0.2.0/24]}
        enableFloatingIP: true
        floatingIP: 203.0.113.10
        fixedIP: 10.6.0.10
        port: 8443
      managedNetwork: {mtu: 1450, enablePortSecurity: false}
      managedRouter:
        externalIPs: [{fixedIP: 203.0.113.5, subnet: {id: 7c1e2d3f-5a6b-4c8d-9e0f-1a2b3c4d5e6f}}]
      managedSecurityGroups:
        allowAllInClusterTraffic: false
        clusterNodesSecurityGroupRules:
        - {name: ssh, direction: ingress, etherType: IPv4, protocol: tcp, portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: 192.0.2.0/24}
      managedSubnets: [{cidr: 10.6.0.0/24}]
      tags: [magnetite-cluster-c]
      bastion:
        enabled: false
        spec:
          flavor: {filter: {name: m1.small}}
          image: {filter: {name: ubuntu}}
          ports: [{enablePortSecurity: true}]
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: OpenStackClusterTemplate
metadata: {name: no-external-network}
spec:
  template:
    spec:
      identityRef: {type: Secret, name: c-cloud-config, cloudName: openstack}
      apiServer:
        managedLoadBalancer: {enabled: false}
        enableFloatingIP: false
      enableExternalNetwork: false
      network: {id: 9f2cbb7a-0b54-4b5b-9d53-5a1c3e0f4b11}
      subnets: [{id: 2b9ea1f0-4f3c-4d7e-8a5e-0c6d2f1b9a33}]
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: OpenStackMachineTemplate
metadata: {name: flavor-by-id}
spec:
  template:
    spec:
      flavor: {id: "3"}
      image: {filter: {name: ubuntu}}
      ports:
      - network: {id: 9f2cbb7a-0b54-4b5b-9d53-5a1c3e0f4b11}
        enablePortSecurity: false
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: OpenStackMachineTemplate
metadata: {name: flavor-by-name}
spec:
  template:
    spec:
      flavor: {filter: {name: m1.medium}}
      image: {filter: {name: ubuntu}}
      ports: [{enablePortSecurity: true}]
`

const v1beta1Objects = `
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackClusterTemplate
metadata: {name: managed-network}
spec:
  template:
    spec:
      identityRef: {type: Secret, name: c-cloud-config, cloudName: openstack}
      apiServerLoadBalancer: {enabled: true, allowedCIDRs: [192.0.2.0/24]}
      disableAPIServerFloatingIP: false
      apiServerFloatingIP: 203.0.113.10
      apiServerFixedIP: 10.6.0.10
      apiServerPort: 8443
      networkMTU: 1450
      disablePortSecurity: true
      externalRouterIPs: [{fixedIP: 203.0.113.5, subnet: {id: 7c1e2d3f-5a6b-4c8d-9e0f-1a2b3c4d5e6f}}]
      managedSecurityGroups:
        allowAllInClusterTraffic: false
        allNodesSecurityGroupRules:
        - {name: ssh, direction: ingress, etherType: IPv4, protocol: tcp, portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: 192.0.2.0/24}
      managedSubnets: [{cidr: 10.6.0.0/24}]
      tags: [magnetite-cluster-c]
      bastion:
        enabled: false
        spec:
          flavor: m1.small
          image: {filter: {name: ubuntu}}
          ports: [{disablePortSecurity: false}]
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackClusterTemplate
metadata: {name: no-external-network}
spec:
  template:
    spec:
      identityRef: {type: Secret, name: c-cloud-config, cloudName: openstack}
      apiServerLoadBalancer: {enabled: false}
      disableAPIServerFloatingIP: true
      disableExternalNetwork: true
      network: {id: 9f2cbb7a-0b54-4b5b-9d53-5a1c3e0f4b11}
      subnets: [{id: 2b9ea1f0-4f3c-4d7e-8a5e-0c6d2f1b9a33}]
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata: {name: flavor-by-id}
spec:
  template:
    spec:
      flavorID: "3"
      image: {filter: {name: ubuntu}}
      ports:
      - network: {id: 9f2cbb7a-0b54-4b5b-9d53-5a1c3e0f4b11}
        disablePortSecurity: true
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: OpenStackMachineTemplate
metadata: {name: flavor-by-name}
spec:
  template:
    spec:
      flavor: m1.medium
      image: {filter: {name: ubuntu}}
      ports: [{disablePortSecurity: false}]
`

func decode(t *testing.T, docs string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.DecodeObjects(strings.NewReader(docs))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		o.SetNamespace(testenv.GoldenNamespace)
	}
	return objs
}

// TestConvertWritesEveryDifferenceInV1beta1sShape converts objects that use
// every field v1beta1 names differently into v1beta1, compares them with
// the same objects written by hand from v0.14.7's CRDs, and has real API
// servers accept each version with strict field validation: the v1beta2
// objects with CAPO v0.15.0-beta.0's CRDs, the converted ones with
// v0.14.7's, where any field of the wrong version is refused.
func TestConvertWritesEveryDifferenceInV1beta1sShape(t *testing.T) {
	in, want := decode(t, v1beta2Objects), decode(t, v1beta1Objects)
	var converted []*unstructured.Unstructured
	for i, o := range in {
		c := o.DeepCopy()
		if err := (openstack.Infrastructure{}).Convert("v1beta1", c.Object); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
		c.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta1")
		if !reflect.DeepEqual(c.Object, want[i].Object) {
			got, _ := yaml.Marshal(c.Object)
			exp, _ := yaml.Marshal(want[i].Object)
			t.Errorf("%s %s converted to\n%s\nwant\n%s", o.GetKind(), o.GetName(), got, exp)
		}
		converted = append(converted, c)

		same := o.DeepCopy()
		if err := (openstack.Infrastructure{}).Convert("v1beta2", same.Object); err != nil || !reflect.DeepEqual(same.Object, o.Object) {
			t.Errorf("%s %s at v1beta2, its own shape: changed or %v", o.GetKind(), o.GetName(), err)
		}
	}
	if testing.Short() {
		return
	}
	for _, at := range []struct {
		release string
		objs    []*unstructured.Unstructured
	}{{testenv.CAPOv015, in}, {testenv.CAPOv014, converted}} {
		t.Run(at.release, func(t *testing.T) {
			_, dc, mapper := testenv.StartGolden(t, []string{at.release})
			for _, o := range at.objs {
				if err := testenv.DryRunApply(context.Background(), dc, mapper, o); err != nil {
					t.Errorf("%s %s at %s: %v", o.GetKind(), o.GetName(), o.GetAPIVersion(), err)
				}
			}
		})
	}
}

// TestConvertRefusesWhatV1beta1CannotSay: a primary subnet (v1beta1 takes
// the first of subnets), a flavor named by neither ID nor name, and a
// version CAPO never served Magnetite's shapes at.
func TestConvertRefusesWhatV1beta1CannotSay(t *testing.T) {
	for _, tc := range []struct {
		version, doc, says string
	}{
		{"v1beta1", `{kind: OpenStackClusterTemplate, spec: {template: {spec: {primarySubnet: {id: x}, subnets: [{id: x}]}}}}`, "primarySubnet exists from v1beta2 on"},
		{"v1beta1", `{kind: OpenStackMachineTemplate, spec: {template: {spec: {flavor: {filter: {}}}}}}`, "v1beta1 names a flavor by ID or name only"},
		{"v1alpha7", `{kind: OpenStackMachineTemplate, spec: {template: {spec: {}}}}`, "CAPO serves no version v1alpha7 that Magnetite writes"},
	} {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(tc.doc), &obj); err != nil {
			t.Fatal(err)
		}
		if err := (openstack.Infrastructure{}).Convert(tc.version, obj); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s at %s: %v, want %q", tc.doc, tc.version, err, tc.says)
		}
	}
}
