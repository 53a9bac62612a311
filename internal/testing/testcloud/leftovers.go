package testcloud

import "testing"

// CheckNothingLeft fails t for anything left in the cloud once every
// cluster is gone: what CAPO made and what the workloads' cloud controller
// manager and Cinder CSI driver made as the clusters.
func (c *Cloud) CheckNothingLeft(t testing.TB) {
	t.Helper()
	if s, p, g, l, v, f := c.Servers(), c.Ports(), c.ServerGroups(), c.LoadBalancers(), c.Volumes(), c.FloatingIPs(); len(s)+len(p)+len(g)+len(l)+len(v)+len(f) > 0 {
		t.Errorf("left in the cloud: servers %+v ports %+v server groups %+v load balancers %+v volumes %+v floating IPs %+v", s, p, g, l, v, f)
	}
	if sg, snap := c.SecurityGroups(), c.Snapshots(); len(sg)+len(snap) > 0 {
		t.Errorf("left in the cloud: security groups %+v snapshots %+v", sg, snap)
	}
	if n, s, r := c.Networks(), c.Subnets(), c.Routers(); len(n)+len(s)+len(r) > 0 {
		t.Errorf("left in the cloud: networks %+v subnets %+v routers %+v", n, s, r)
	}
}
