package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/store"
)

// storedShape is the wire shape of v with the transforms every stored
// object needs: times as the API shows them, maps and lists never null.
func storedShape(v any, optional ...string) *wireShape {
	return newWireShape(v, optional...).
		with(wireTime, "created_at", "updated_at").
		with(emptyObjectIfNull, "labels", "health_status_reason").
		with(emptyArrayIfNull, "node_addresses")
}

var (
	templateWire = storedShape(apitypes.ClusterTemplate{})
	bayModelWire = storedShape(apitypes.BayModel{})

	someString         = &apitypes.OptionalString{}
	someFaults         = map[string]string{"": ""}
	clusterSummaryWire = storedShape(apitypes.ClusterSummary{StackID: someString, ClusterID: someString},
		"stack_id", "cluster_id")
	clusterDetailWire = storedShape(apitypes.Cluster{
		ClusterSummary: apitypes.ClusterSummary{StackID: someString, ClusterID: someString}, Faults: someFaults,
	}, "stack_id", "cluster_id", "faults")
	baySummaryWire = storedShape(apitypes.BaySummary{}).
			renamed("cluster_template_id", "baymodel_id").renamed("create_timeout", "bay_create_timeout")
	bayDetailWire = storedShape(apitypes.Bay{BayFaults: someFaults}, "bay_faults").
			renamed("cluster_template_id", "baymodel_id").renamed("create_timeout", "bay_create_timeout")

	nodeGroupSummaryWire = storedShape(apitypes.NodeGroupSummary{})
	nodeGroupDetailWire  = storedShape(apitypes.NodeGroup{
		NodeLabels: &map[string]string{}, NodeTaints: &[]apitypes.Taint{},
	}, "node_labels", "node_taints").
		with(emptyObjectIfNull, "node_labels").
		with(emptyArrayIfNull, "node_taints")
)

func (f *family) templateWire() *wireShape {
	if f.bay {
		return bayModelWire
	}
	return templateWire
}

// templateWriter writes stored templates as the request's route shows them.
type templateWriter struct {
	obj        *wireObject
	base, coll string
	links      []byte
}

func newTemplateWriter(r *http.Request) *templateWriter {
	f := familyOf(r)
	return &templateWriter{obj: f.templateWire().object(), base: jsonText(baseURL(r)), coll: f.templates}
}

func (tw *templateWriter) appendTo(dst []byte, row store.StoredRow) ([]byte, error) {
	if err := tw.obj.load(row.Data); err != nil {
		return nil, fmt.Errorf("cluster template %s: %w", row.UUID, err)
	}
	tw.links = appendLinks(tw.links[:0], tw.base, tw.coll, row.UUID)
	tw.obj.set("links", tw.links)
	return tw.obj.appendTo(dst), nil
}

// parentLabels are a template's labels, decoded and as stored.
type parentLabels struct {
	labels map[string]string
	raw    []byte
}

// clusterWriter writes stored clusters, with what their node groups and
// templates add, as the request's route, microversion and form (summary or
// detail) show them.
type clusterWriter struct {
	s         *Server
	ctx       context.Context
	obj       *wireObject
	base      string
	coll      string
	detail    bool
	bay       bool
	clusterID bool // 1.13 on: stack_id is shown as cluster_id
	groups    map[string][]store.StoredNodeGroup
	parents   map[string]parentLabels
	// diffs are the labels diffs already written, by template and the
	// cluster's stored labels: clusters made from one template mostly
	// share their labels.
	diffs map[string]map[string][3][]byte
	// Buffers of the computed members, reused cluster after cluster.
	nodes, masters, nodeAddrs, masterAddrs, links []byte
}

func (s *Server) newClusterWriter(r *http.Request, detail bool, rows []store.StoredRow) (*clusterWriter, error) {
	f := familyOf(r)
	shape := clusterSummaryWire
	switch {
	case f.bay && detail:
		shape = bayDetailWire
	case f.bay:
		shape = baySummaryWire
	case detail:
		shape = clusterDetailWire
	}
	ids := make([]string, len(rows))
	for i, row := range rows {
		ids[i] = row.UUID
	}
	groups, err := s.st.StoredNodeGroupsOf(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	return &clusterWriter{
		s: s, ctx: r.Context(), obj: shape.object(), base: jsonText(baseURL(r)), coll: f.clusters,
		detail: detail, bay: f.bay, clusterID: versionOf(r.Context()).AtLeast(13),
		groups: groups, parents: map[string]parentLabels{}, diffs: map[string]map[string][3][]byte{},
	}, nil
}

func (cw *clusterWriter) appendTo(dst []byte, row store.StoredRow) ([]byte, error) {
	o := cw.obj
	if err := o.load(row.Data); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", row.UUID, err)
	}
	status := model.Status(jsonString(o.get("status")))
	var nodeCount, masterCount int
	var faults map[string]string
	cw.nodeAddrs, cw.masterAddrs = append(cw.nodeAddrs[:0], '['), append(cw.masterAddrs[:0], '[')
	for _, ng := range cw.groups[row.UUID] {
		addrs, reason, err := nodeGroupFacts(ng)
		if err != nil {
			return nil, err
		}
		if ng.Role == model.RoleMaster {
			masterCount += ng.NodeCount
			cw.masterAddrs = appendListItems(cw.masterAddrs, addrs)
		} else {
			nodeCount += ng.NodeCount
			cw.nodeAddrs = appendListItems(cw.nodeAddrs, addrs)
		}
		if model.Status(ng.Status).Failed() && reason != nil {
			if faults == nil {
				faults = map[string]string{}
			}
			faults[ng.Name] = *reason
		}
	}
	cw.nodeAddrs, cw.masterAddrs = append(cw.nodeAddrs, ']'), append(cw.masterAddrs, ']')
	cw.nodes = strconv.AppendInt(cw.nodes[:0], int64(nodeCount), 10)
	cw.masters = strconv.AppendInt(cw.masters[:0], int64(masterCount), 10)
	o.set("node_count", cw.nodes)
	o.set("master_count", cw.masters)
	o.set("node_addresses", cw.nodeAddrs)
	o.set("master_addresses", cw.masterAddrs)
	if status.Failed() && len(faults) > 0 {
		b, _ := json.Marshal(faults)
		o.set("faults", b)
		o.set("bay_faults", b)
	}
	if !cw.bay {
		stack := o.get("stack_id")
		if stack == nil {
			stack = []byte("null")
		}
		if cw.clusterID {
			o.set("stack_id", nil)
			o.set("cluster_id", stack)
		} else {
			o.set("stack_id", stack)
		}
	}
	if cw.detail && !cw.bay {
		if err := cw.setLabelsDiff(jsonString(o.get("cluster_template_id"))); err != nil {
			return nil, err
		}
	}
	cw.links = appendLinks(cw.links[:0], cw.base, cw.coll, row.UUID)
	o.set("links", cw.links)
	return o.appendTo(dst), nil
}

// setLabelsDiff sets labels_overridden, labels_added and labels_skipped
// against the labels of the cluster's template.
func (cw *clusterWriter) setLabelsDiff(template string) error {
	o := cw.obj
	if d, ok := cw.diffs[template][string(o.get("labels"))]; ok {
		for i, key := range labelsDiffKeys {
			o.set(key, d[i])
		}
		return nil
	}
	parent, ok := cw.parents[template]
	if !ok {
		parent.labels = cw.s.templateLabels(cw.ctx, template)
		parent.raw, _ = json.Marshal(parent.labels)
		cw.parents[template] = parent
		cw.diffs[template] = map[string][3][]byte{}
	}
	if err := setLabelsDiff(o, parent); err != nil {
		return err
	}
	var d [3][]byte
	for i, key := range labelsDiffKeys {
		d[i] = o.get(key)
	}
	cw.diffs[template][string(o.get("labels"))] = d
	return nil
}

// labelsDiffKeys are the members setLabelsDiff sets.
var labelsDiffKeys = []string{"labels_overridden", "labels_added", "labels_skipped"}

// setLabelsDiff sets an object's labels_overridden, labels_added and
// labels_skipped against its parent's labels.
func setLabelsDiff(o *wireObject, parent parentLabels) error {
	raw := o.get("labels")
	if bytes.Equal(raw, parent.raw) {
		// Maps are stored with sorted keys: the same bytes, the same labels.
		for _, key := range labelsDiffKeys {
			o.set(key, []byte("{}"))
		}
		return nil
	}
	var labels map[string]string
	if raw != nil {
		if err := json.Unmarshal(raw, &labels); err != nil {
			return fmt.Errorf("stored labels: %w", err)
		}
	}
	if parent.labels == nil && len(parent.raw) > 0 {
		if err := json.Unmarshal(parent.raw, &parent.labels); err != nil {
			return fmt.Errorf("stored parent labels: %w", err)
		}
	}
	over, added, skipped := labelsDiff(parent.labels, labels)
	for i, m := range []map[string]string{over, added, skipped} {
		b, _ := json.Marshal(m)
		o.set(labelsDiffKeys[i], b)
	}
	return nil
}

// appendNodeGroup writes a stored node group's full form, with the labels
// diff against its cluster's stored labels, as the request's microversion
// shows it.
func appendNodeGroup(dst []byte, r *http.Request, cluster store.StoredRow, ng store.StoredNodeGroup) ([]byte, error) {
	o := nodeGroupDetailWire.object()
	if err := o.load(ng.Data); err != nil {
		return nil, fmt.Errorf("node group %s: %w", ng.UUID, err)
	}
	var parent parentLabels
	if err := eachMember(cluster.Data, func(key, val []byte) {
		if string(key) == "labels" {
			parent.raw = val
		}
	}); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster.UUID, err)
	}
	if err := setLabelsDiff(o, parent); err != nil {
		return nil, fmt.Errorf("node group %s: %w", ng.UUID, err)
	}
	null := []byte("null")
	for _, key := range []string{"node_labels", "node_taints"} {
		switch {
		case !versionOf(r.Context()).AtLeast(14):
			o.set(key, nil)
		case o.get(key) == nil:
			// Written before the field existed: shown empty.
			o.set(key, null)
		}
	}
	o.set("links", appendLinks(nil, jsonText(baseURL(r)), "clusters/"+cluster.UUID+"/nodegroups", ng.UUID))
	return o.appendTo(dst), nil
}

// nodeGroupFacts are a stored node group's addresses (a JSON list) and,
// when it has one, its status reason.
func nodeGroupFacts(ng store.StoredNodeGroup) (addrs []byte, reason *string, err error) {
	var rawReason []byte
	err = eachMember(ng.Data, func(key, val []byte) {
		switch string(key) {
		case "node_addresses":
			addrs = val
		case "status_reason":
			rawReason = val
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("node group %s: %w", ng.UUID, err)
	}
	if rawReason != nil && string(rawReason) != "null" {
		s := jsonString(rawReason)
		reason = &s
	}
	return addrs, reason, nil
}

// appendListItems appends the items of the JSON list list to the list
// being written in dst (opened with '[').
func appendListItems(dst, list []byte) []byte {
	if len(list) < 2 || list[0] != '[' {
		return dst
	}
	items := bytes.TrimSpace(list[1 : len(list)-1])
	if len(items) == 0 {
		return dst
	}
	if dst[len(dst)-1] != '[' {
		dst = append(dst, ',')
	}
	return append(dst, items...)
}

// appendNodeGroupPage writes a page of node group summaries.
func appendNodeGroupPage(dst []byte, rows []store.StoredNodeGroup, next string) ([]byte, error) {
	obj := nodeGroupSummaryWire.object()
	return appendPage(dst, "nodegroups", next, rows, func(dst []byte, row store.StoredNodeGroup) ([]byte, error) {
		if err := obj.load(row.Data); err != nil {
			return nil, fmt.Errorf("node group %s: %w", row.UUID, err)
		}
		return obj.appendTo(dst), nil
	})
}
