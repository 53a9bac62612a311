package magnumimport

import (
	"slices"

	"github.com/magnetite-io/magnetite/internal/model"
)

// Magnum's rows become Magnetite's objects field for field: the API shows
// them as Magnum showed them.

func templateOf(t *magnumTemplate) *model.ClusterTemplate {
	st := model.ServerTypeVM
	if t.ServerType != nil && *t.ServerType != "" {
		st = model.ServerType(*t.ServerType)
	}
	return &model.ClusterTemplate{
		UUID: t.UUID, Name: t.Name, ProjectID: t.ProjectID, UserID: t.UserID,
		TemplateSpec: model.TemplateSpec{
			COE: t.COE, ImageID: t.ImageID, FlavorID: t.FlavorID, MasterFlavorID: t.MasterFlavorID,
			DNSNameserver: t.DNSNameserver, KeypairID: t.KeypairID, ExternalNetworkID: t.ExternalNetworkID,
			FixedNetwork: t.FixedNetwork, FixedSubnet: t.FixedSubnet, NetworkDriver: t.NetworkDriver,
			VolumeDriver: t.VolumeDriver, APIServerPort: t.APIServerPort, DockerVolumeSize: t.DockerVolumeSize,
			DockerStorageDriver: t.DockerStorageDriver, ClusterDistro: t.ClusterDistro, Labels: nonNilMap(t.Labels),
			HTTPProxy: t.HTTPProxy, HTTPSProxy: t.HTTPSProxy, NoProxy: t.NoProxy, RegistryEnabled: t.RegistryEnabled,
			TLSDisabled: t.TLSDisabled, Public: t.Public, Hidden: t.Hidden, ServerType: st,
			InsecureRegistry: t.InsecureRegistry, MasterLBEnabled: t.MasterLBEnabled,
			FloatingIPEnabled: t.FloatingIPEnabled, Tags: t.Tags,
		},
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

func clusterOf(c *magnumCluster) *model.Cluster {
	out := &model.Cluster{
		UUID: c.UUID, Name: deref(c.Name), ProjectID: c.ProjectID, UserID: c.UserID,
		ClusterTemplateID: c.ClusterTemplateID, Keypair: c.Keypair, DockerVolumeSize: c.DockerVolumeSize,
		Labels: nonNilMap(c.Labels), MasterFlavorID: c.MasterFlavorID, FlavorID: c.FlavorID,
		StackID: c.StackID, Status: model.Status(deref(c.Status)), StatusReason: c.StatusReason,
		HealthStatusReason: c.HealthStatusReason,
		ClusterRuntime: model.ClusterRuntime{DiscoveryURL: c.DiscoveryURL, APIAddress: c.APIAddress,
			COEVersion: c.COEVersion, ContainerVersion: c.ContainerVersion},
		ClusterNetwork: model.ClusterNetwork{FixedNetwork: c.FixedNetwork, FixedSubnet: c.FixedSubnet,
			FloatingIPEnabled: c.FloatingIPEnabled, MasterLBEnabled: c.MasterLBEnabled},
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	if c.CreateTimeout != nil {
		out.CreateTimeout = *c.CreateTimeout
	}
	if c.HealthStatus != nil {
		if h := model.Health(*c.HealthStatus); slices.Contains(model.AllHealth, h) {
			out.HealthStatus = &h
		}
	}
	return out
}

func nodeGroupOf(g *magnumNodeGroup) *model.NodeGroup {
	out := &model.NodeGroup{
		UUID: g.UUID, Name: g.Name, ClusterID: g.ClusterID, ProjectID: g.ProjectID,
		DockerVolumeSize: g.DockerVolumeSize, Labels: nonNilMap(g.Labels), FlavorID: g.FlavorID, ImageID: g.ImageID,
		NodeAddresses: g.NodeAddresses, Role: g.Role, MaxNodeCount: g.MaxNodeCount, IsDefault: g.IsDefault,
		StackID: g.StackID, Status: model.Status(deref(g.Status)), StatusReason: g.StatusReason, Version: g.Version,
		CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt,
	}
	if out.NodeAddresses == nil {
		out.NodeAddresses = []string{}
	}
	if g.NodeCount != nil {
		out.NodeCount = *g.NodeCount
	}
	if g.MinNodeCount != nil {
		out.MinNodeCount = *g.MinNodeCount
	}
	return out
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
