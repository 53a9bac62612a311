package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/client"
	"github.com/magnetite-io/magnetite/internal/labels"
)

func nodeGroupCommand(o *clientOptions) *cobra.Command {
	return group("nodegroup", "Manage node groups of a cluster (openstack coe nodegroup)",
		nodeGroupCreateCommand(o), nodeGroupListCommand(o), nodeGroupShowCommand(o),
		nodeGroupUpdateCommand(o), nodeGroupDeleteCommand(o))
}

func nodeGroupCreateCommand(o *clientOptions) *cobra.Command {
	var role, flavor, image, nodeLabels, nodeTaints string
	var labels []string
	var nodeCount, minNodes, maxNodes, dockerVolumeSize int
	var mergeLabels bool
	cmd := prepared(o, &cobra.Command{
		Use:   "create CLUSTER NAME [flags]",
		Short: "Add a node group to a cluster",
		Args:  cobra.ExactArgs(2),
	}, func(cmd *cobra.Command, args []string) (map[string]any, error) {
		body := map[string]any{"name": args[1]}
		setIf(cmd, body, "role", "role", role)
		setIf(cmd, body, "flavor", "flavor_id", flavor)
		setIf(cmd, body, "image", "image_id", image)
		setIf(cmd, body, "node-count", "node_count", nodeCount)
		setIf(cmd, body, "min-nodes", "min_node_count", minNodes)
		setIf(cmd, body, "max-nodes", "max_node_count", maxNodes)
		setIf(cmd, body, "docker-volume-size", "docker_volume_size", dockerVolumeSize)
		setIf(cmd, body, "merge-labels", "merge_labels", mergeLabels)
		return body, errors.Join(putLabels(body, labels), nodeLabelsAndTaints(cmd, body, nodeLabels, nodeTaints))
	}, func(cmd *cobra.Command, c *client.Client, args []string, body map[string]any) error {
		ng, err := c.CreateNodeGroup(cmd.Context(), args[0], body)
		return o.printed(cmd, ng, err)
	})
	f := cmd.Flags()
	f.StringVar(&role, "role", "", "role of the nodes (default worker)")
	f.StringVar(&flavor, "flavor", "", "Nova flavor of the nodes (default: the cluster's)")
	f.StringVar(&image, "image", "", "Glance image of the nodes (default: the cluster's)")
	f.IntVar(&nodeCount, "node-count", 1, "nodes")
	f.IntVar(&minNodes, "min-nodes", 0, "fewest nodes the autoscaler keeps")
	f.IntVar(&maxNodes, "max-nodes", 0, "most nodes the autoscaler adds")
	f.IntVar(&dockerVolumeSize, "docker-volume-size", 0, "size in GB of the container volume of each node")
	f.StringArrayVar(&labels, "labels", nil, "KEY1=VALUE1,KEY2=VALUE2;KEY3=VALUE3... or one --labels per pair")
	f.BoolVar(&mergeLabels, "merge-labels", false, "merge the labels over the cluster's")
	nodeLabelFlags(cmd, &nodeLabels, &nodeTaints)
	return cmd
}

func nodeLabelFlags(cmd *cobra.Command, nodeLabels, nodeTaints *string) {
	cmd.Flags().StringVar(nodeLabels, "node-labels", "", "Kubernetes labels of the nodes: KEY1=VALUE1,KEY2=VALUE2")
	cmd.Flags().StringVar(nodeTaints, "node-taints", "", "Kubernetes taints of the nodes: KEY1=VALUE1:EFFECT1,KEY2:EFFECT2")
}

// nodeLabelsAndTaints puts --node-labels and --node-taints into a create
// body in the API's form.
func nodeLabelsAndTaints(cmd *cobra.Command, body map[string]any, nodeLabels, nodeTaints string) error {
	if cmd.Flags().Changed("node-labels") {
		l, err := parseNodeLabels(nodeLabels)
		if err != nil {
			return err
		}
		body["node_labels"] = l
	}
	if cmd.Flags().Changed("node-taints") {
		t, err := parseTaints(nodeTaints)
		if err != nil {
			return err
		}
		body["node_taints"] = t
	}
	return nil
}

func parseNodeLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range labels.SplitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("node labels must be KEY=VALUE, not %q", kv)
		}
		out[k] = v
	}
	return out, nil
}

// parseTaints reads KEY[=VALUE]:EFFECT,... as magnumclient does.
func parseTaints(s string) ([]map[string]string, error) {
	out := []map[string]string{}
	for _, t := range labels.SplitList(s) {
		kv, effect, ok := strings.Cut(t, ":")
		if !ok || effect == "" {
			return nil, fmt.Errorf("taint %q: write KEY=VALUE:EFFECT or KEY:EFFECT", t)
		}
		switch effect {
		case "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			return nil, fmt.Errorf("taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", t)
		}
		k, v, _ := strings.Cut(kv, "=")
		taint := map[string]string{"key": k, "effect": effect}
		if v != "" {
			taint["value"] = v
		}
		out = append(out, taint)
	}
	return out, nil
}

func nodeGroupListCommand(o *clientOptions) *cobra.Command {
	var lo client.ListOptions
	var role string
	cmd := o.listed("list CLUSTER", "List a cluster's node groups", cobra.ExactArgs(1), &lo, func(ctx context.Context, c *client.Client, args []string) (any, error) {
		if role != "" {
			lo.Extra = url.Values{"role": {role}}
		}
		return c.ListNodeGroups(ctx, args[0], lo)
	}, "uuid", "name", "flavor_id", "image_id", "node_count", "status", "role")
	cmd.Flags().StringVar(&role, "role", "", "list only node groups of this role")
	return cmd
}

func nodeGroupShowCommand(o *clientOptions) *cobra.Command {
	return o.shown("show CLUSTER NODEGROUP", "Show a node group", cobra.ExactArgs(2), func(ctx context.Context, c *client.Client, args []string) (any, error) {
		return c.GetNodeGroup(ctx, args[0], args[1])
	})
}

func nodeGroupUpdateCommand(o *clientOptions) *cobra.Command {
	return o.updated("update CLUSTER NODEGROUP add|replace|remove ATTRIBUTE=VALUE...", "Change a node group (e.g. update k8s gpu replace max_node_count=5)", 2,
		func(ctx context.Context, c *client.Client, idents []string, patch []client.PatchOp) (any, error) {
			return c.UpdateNodeGroup(ctx, idents[0], idents[1], patch)
		})
}

func nodeGroupDeleteCommand(o *clientOptions) *cobra.Command {
	return o.deleted("delete CLUSTER NODEGROUP...", "Delete node groups of a cluster", 1, "Request to delete node group %s has been accepted.",
		func(ctx context.Context, c *client.Client, parents []string, ident string) error {
			return c.DeleteNodeGroup(ctx, parents[0], ident)
		})
}
