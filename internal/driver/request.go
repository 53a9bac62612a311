package driver

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/facts"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// PlaceholderUUID stands in for the UUID of an object that was not created
// yet, so offline renders are reproducible.
const PlaceholderUUID = "00000000-0000-0000-0000-000000000000"

// DecodeRequest reads a template, a cluster and cloud facts written as YAML
// or JSON with Magnum's field names, the way `magnetite render` takes them.
// The cluster may list its node groups under "nodegroups"; the default
// master and worker groups are added from master_count and node_count (and
// the flavors) as the API does at create time. Labels merge over the
// template's unless merge_labels is false.
func DecodeRequest(templateDoc, clusterDoc, factsDoc []byte) (Request, error) {
	var req Request
	ct, err := decodeTemplate(templateDoc)
	if err != nil {
		return req, fmt.Errorf("template: %w", err)
	}
	c, ngs, err := decodeCluster(clusterDoc, ct)
	if err != nil {
		return req, fmt.Errorf("cluster: %w", err)
	}
	f := &facts.Facts{}
	if len(strings.TrimSpace(string(factsDoc))) > 0 {
		if err := yaml.UnmarshalStrict(factsDoc, f); err != nil {
			return req, fmt.Errorf("facts: %w", err)
		}
	}
	return Request{Template: ct, Cluster: c, NodeGroups: ngs, Facts: f}, nil
}

// rawObject decodes a document and lifts its labels (whose values may be
// numbers or booleans in YAML) into strings.
func rawObject(doc []byte) (map[string]any, error) {
	var raw map[string]any
	if err := yaml.Unmarshal(doc, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		raw = map[string]any{}
	}
	if err := liftLabels(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func liftLabels(raw map[string]any) error {
	for _, k := range []string{"labels", "node_labels"} {
		if v, ok := raw[k]; ok {
			m, err := labels.ParseValue(v)
			if err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
			raw[k] = m
		}
	}
	return nil
}

func into(raw map[string]any, dst any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return dec.Decode(dst)
}

func decodeTemplate(doc []byte) (*model.ClusterTemplate, error) {
	raw, err := rawObject(doc)
	if err != nil {
		return nil, err
	}
	ct := &model.ClusterTemplate{TemplateSpec: model.TemplateSpec{COE: "kubernetes",
		ServerType: model.ServerTypeVM, FloatingIPEnabled: true}}
	if err := into(raw, ct); err != nil {
		return nil, err
	}
	if ct.ImageID == "" {
		return nil, fmt.Errorf("image_id is required")
	}
	if ct.UUID == "" {
		ct.UUID = PlaceholderUUID
	}
	if ct.Labels == nil {
		ct.Labels = map[string]string{}
	}
	return ct, nil
}

// clusterDoc adds the create-time fields Magnum accepts but does not store
// on the cluster itself.
type clusterDoc struct {
	model.Cluster
	MasterCount *int               `json:"master_count"`
	NodeCount   *int               `json:"node_count"`
	NodeGroups  []*model.NodeGroup `json:"nodegroups"`
}

func decodeCluster(doc []byte, ct *model.ClusterTemplate) (*model.Cluster, []*model.NodeGroup, error) {
	raw, err := rawObject(doc)
	if err != nil {
		return nil, nil, err
	}
	if ngs, ok := raw["nodegroups"].([]any); ok {
		for i, x := range ngs {
			m, ok := x.(map[string]any)
			if !ok {
				return nil, nil, fmt.Errorf("nodegroups[%d] is not an object", i)
			}
			if _, set := m["merge_labels"]; !set {
				m["merge_labels"] = true
			}
			if err := liftLabels(m); err != nil {
				return nil, nil, fmt.Errorf("nodegroups[%d]: %v", i, err)
			}
		}
	}
	d := clusterDoc{Cluster: model.Cluster{MergeLabels: true,
		ClusterNetwork: model.ClusterNetwork{FloatingIPEnabled: ct.FloatingIPEnabled,
			MasterLBEnabled: ct.MasterLBEnabled}}}
	if err := into(raw, &d); err != nil {
		return nil, nil, err
	}
	c := &d.Cluster
	if c.Name == "" {
		return nil, nil, fmt.Errorf("name is required")
	}
	if c.UUID == "" {
		c.UUID = PlaceholderUUID
	}
	c.ClusterTemplateID = ct.UUID
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if c.MergeLabels {
		c.Labels = labels.Merge(ct.Labels, c.Labels)
	}
	fill := func(p **string, v *string) {
		if *p == nil {
			*p = v
		}
	}
	fill(&c.MasterFlavorID, ct.MasterFlavorID)
	fill(&c.FlavorID, ct.FlavorID)
	fill(&c.FixedNetwork, ct.FixedNetwork)
	fill(&c.FixedSubnet, ct.FixedSubnet)
	fill(&c.Keypair, ct.KeypairID)

	ngs := d.NodeGroups
	hasMaster, hasDefaultWorker := false, false
	for _, ng := range ngs {
		hasMaster = hasMaster || ng.Role == model.RoleMaster
		hasDefaultWorker = hasDefaultWorker || ng.Name == model.DefaultWorkerNodeGroup
	}
	count := func(p *int, def int) int {
		if p == nil {
			return def
		}
		return *p
	}
	if !hasMaster {
		ngs = append([]*model.NodeGroup{{Name: model.DefaultMasterNodeGroup, Role: model.RoleMaster, IsDefault: true,
			NodeCount: count(d.MasterCount, 1), FlavorID: c.MasterFlavorID, MergeLabels: true}}, ngs...)
	}
	if !hasDefaultWorker {
		// As the API does, the default worker takes its bounds from the
		// min_node_count and max_node_count labels.
		minNodes, maxNodes, err := NodeBounds(c.Labels)
		if err != nil {
			return nil, nil, err
		}
		ngs = append(ngs, &model.NodeGroup{Name: model.DefaultWorkerNodeGroup, Role: model.RoleWorker, IsDefault: true,
			NodeCount: count(d.NodeCount, 1), FlavorID: c.FlavorID, MergeLabels: true, MinNodeCount: minNodes, MaxNodeCount: maxNodes})
	}
	for _, ng := range ngs {
		if ng.Role == "" {
			ng.Role = model.RoleWorker
		}
		if ng.FlavorID == nil {
			if ng.Role == model.RoleMaster {
				ng.FlavorID = c.MasterFlavorID
			} else {
				ng.FlavorID = c.FlavorID
			}
		}
		if ng.ImageID == nil {
			img := ct.ImageID
			ng.ImageID = &img
		}
		if ng.Labels == nil {
			ng.Labels = map[string]string{}
		}
		if ng.MergeLabels {
			ng.Labels = labels.Merge(c.Labels, ng.Labels)
		}
		ng.ClusterID = c.UUID
	}
	return c, ngs, nil
}
