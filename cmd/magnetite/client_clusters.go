package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/client"
)

func clusterCommand(o *clientOptions) *cobra.Command {
	return group("cluster", "Manage clusters (openstack coe cluster)",
		clusterCreateCommand(o), clusterListCommand(o), clusterShowCommand(o),
		clusterUpdateCommand(o), clusterResizeCommand(o), clusterUpgradeCommand(o), clusterRebaseCommand(o),
		clusterDeleteCommand(o), clusterConfigCommand(o), clusterEventsCommand(o))
}

// waitFlags are the flags of commands that can wait for a cluster to
// settle, drawing its progress, or follow a host operation.
type waitFlags struct {
	wait     bool
	noWait   bool // host changes follow their operation unless --no-wait
	timeout  time.Duration
	interval time.Duration
}

func (w *waitFlags) bind(cmd *cobra.Command, waitFlag, timeoutFlag string) {
	if waitFlag != "" {
		cmd.Flags().BoolVar(&w.wait, waitFlag, false, "wait until the cluster settles, drawing its progress; fail if it ends *_FAILED")
	}
	w.bindTimeout(cmd, timeoutFlag, "wait until the cluster settles")
}

// bindTimeout adds the flag bounding the wait, whose default is until, and
// the hidden --poll-interval.
func (w *waitFlags) bindTimeout(cmd *cobra.Command, timeoutFlag, until string) {
	cmd.Flags().DurationVar(&w.timeout, timeoutFlag, 0, "give up waiting after this long, e.g. 90m (default: "+until+")")
	cmd.Flags().DurationVar(&w.interval, "poll-interval", 2*time.Second, "how often to ask the API while waiting")
	_ = cmd.Flags().MarkHidden("poll-interval")
}

// waiting is a connected command with the wait flags named waitFlag and
// timeoutFlag, which run gets.
func (o *clientOptions) waiting(cmd *cobra.Command, waitFlag, timeoutFlag string, run func(cmd *cobra.Command, c *client.Client, args []string, w waitFlags) error) *cobra.Command {
	w := &waitFlags{}
	cmd.RunE = o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
		return run(cmd, c, args, *w)
	})
	w.bind(cmd, waitFlag, timeoutFlag)
	return cmd
}

// accepted reports an asynchronous request, then waits for the cluster
// to settle when asked to.
func (o *clientOptions) accepted(cmd *cobra.Command, c *client.Client, w waitFlags, uuid, what string) error {
	if !w.wait {
		if o.output != "table" {
			return o.printObject(cmd.OutOrStdout(), apitypes.ClusterID{UUID: uuid})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Request to %s cluster %s has been accepted.\n", what, uuid)
		return nil
	}
	return o.watch(cmd, c, uuid, w, untilSettled)
}

func clusterCreateCommand(o *clientOptions) *cobra.Command {
	var template, keypair, discoveryURL, flavor, masterFlavor, fixedNetwork, fixedSubnet string
	var labels []string
	var masterCount, nodeCount, dockerVolumeSize, createTimeout int
	var mergeLabels bool
	var floatingIP, masterLB func(body map[string]any) error
	var body map[string]any
	cmd := o.clusterAction("create NAME --cluster-template TEMPLATE [flags]", "Create a cluster; with --wait, draw its progress until it is built", "create", cobra.ExactArgs(1),
		func(cmd *cobra.Command, args []string) error {
			body = map[string]any{"name": args[0], "cluster_template_id": template}
			setIf(cmd, body, "keypair", "keypair", keypair)
			setIf(cmd, body, "discovery-url", "discovery_url", discoveryURL)
			setIf(cmd, body, "flavor", "flavor_id", flavor)
			setIf(cmd, body, "master-flavor", "master_flavor_id", masterFlavor)
			setIf(cmd, body, "fixed-network", "fixed_network", fixedNetwork)
			setIf(cmd, body, "fixed-subnet", "fixed_subnet", fixedSubnet)
			setIf(cmd, body, "master-count", "master_count", masterCount)
			setIf(cmd, body, "node-count", "node_count", nodeCount)
			setIf(cmd, body, "docker-volume-size", "docker_volume_size", dockerVolumeSize)
			setIf(cmd, body, "timeout", "create_timeout", createTimeout)
			setIf(cmd, body, "merge-labels", "merge_labels", mergeLabels)
			return errors.Join(floatingIP(body), masterLB(body), putLabels(body, labels))
		},
		func(ctx context.Context, c *client.Client, _ []string) (string, error) {
			return c.CreateCluster(ctx, body)
		})
	f := cmd.Flags()
	f.StringVar(&template, "cluster-template", "", "cluster template name or UUID (required)")
	_ = cmd.MarkFlagRequired("cluster-template")
	f.StringVar(&keypair, "keypair", "", "Nova keypair (default: the template's)")
	f.StringVar(&discoveryURL, "discovery-url", "", "etcd discovery URL")
	f.StringVar(&flavor, "flavor", "", "Nova flavor of worker nodes (default: the template's)")
	f.StringVar(&masterFlavor, "master-flavor", "", "Nova flavor of control plane nodes (default: the template's)")
	f.StringVar(&fixedNetwork, "fixed-network", "", "private network of the nodes")
	f.StringVar(&fixedSubnet, "fixed-subnet", "", "private subnet of the nodes")
	f.IntVar(&masterCount, "master-count", 1, "control plane nodes")
	f.IntVar(&nodeCount, "node-count", 1, "worker nodes")
	f.IntVar(&dockerVolumeSize, "docker-volume-size", 0, "size in GB of the container volume of each node")
	f.IntVar(&createTimeout, "timeout", 0, "minutes the service allows the create before marking it CREATE_FAILED (default: the service's, longer for bare metal)")
	f.StringArrayVar(&labels, "labels", nil, "KEY1=VALUE1,KEY2=VALUE2;KEY3=VALUE3... or one --labels per pair")
	f.BoolVar(&mergeLabels, "merge-labels", false, "merge the labels over the template's")
	floatingIP = floatingIPFlags(cmd)
	masterLB = toggle(cmd, "master-lb-enabled", "master-lb-disabled", "master_lb_enabled",
		"put a load balancer in front of the control plane", "no load balancer in front of the control plane")
	return cmd
}

func clusterListCommand(o *clientOptions) *cobra.Command {
	var lo client.ListOptions
	return o.listed("list", "List clusters", cobra.NoArgs, &lo, func(ctx context.Context, c *client.Client, _ []string) (any, error) {
		return c.ListClusters(ctx, lo)
	}, "uuid", "name", "keypair", "node_count", "master_count", "status", "health_status")
}

func clusterShowCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "show CLUSTER", Short: "Show a cluster; with --watch, draw its progress until it settles", Args: cobra.ExactArgs(1)}
	return o.waiting(cmd, "watch", "timeout", func(cmd *cobra.Command, c *client.Client, args []string, w waitFlags) error {
		if w.wait {
			return o.watch(cmd, c, args[0], w, untilSettled)
		}
		cl, err := c.GetCluster(cmd.Context(), args[0])
		return o.printed(cmd, cl, err)
	})
}

// clusterAction is a command that asks for a change to a cluster: check
// reads the flags and arguments before anything is asked, act asks and
// returns the cluster's UUID. It reports the accepted request or, with
// --wait, draws the cluster's progress until it settles.
func (o *clientOptions) clusterAction(use, short, what string, args cobra.PositionalArgs, check func(cmd *cobra.Command, args []string) error, act func(ctx context.Context, c *client.Client, args []string) (string, error)) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: args, PreRunE: check}
	return o.waiting(cmd, "wait", "wait-timeout", func(cmd *cobra.Command, c *client.Client, args []string, w waitFlags) error {
		uuid, err := act(cmd.Context(), c, args)
		if err != nil {
			return err
		}
		return o.accepted(cmd, c, w, uuid, what)
	})
}

func clusterUpdateCommand(o *clientOptions) *cobra.Command {
	var patch []client.PatchOp
	return o.clusterAction("update CLUSTER add|replace|remove ATTRIBUTE=VALUE...", "Change a cluster (e.g. update k8s replace node_count=3)", "update", cobra.MinimumNArgs(3),
		func(_ *cobra.Command, args []string) (err error) {
			patch, err = patchFromArgs(args[1], args[2:])
			return err
		},
		func(ctx context.Context, c *client.Client, args []string) (string, error) {
			return c.UpdateCluster(ctx, args[0], patch)
		})
}

func clusterResizeCommand(o *clientOptions) *cobra.Command {
	var req client.ResizeRequest
	cmd := o.clusterAction("resize CLUSTER NODE_COUNT [--nodegroup NAME]", "Change the node count of a node group (default-worker unless named)", "resize", cobra.ExactArgs(2),
		func(_ *cobra.Command, args []string) error {
			if _, err := fmt.Sscan(args[1], &req.NodeCount); err != nil {
				return fmt.Errorf("node count %q is not a whole number", args[1])
			}
			return nil
		},
		func(ctx context.Context, c *client.Client, args []string) (string, error) {
			return c.ResizeCluster(ctx, args[0], req)
		})
	cmd.Flags().StringVar(&req.NodeGroup, "nodegroup", "", "node group to resize")
	cmd.Flags().StringSliceVar(&req.NodesToRemove, "nodes-to-remove", nil, "servers to remove first when shrinking (repeat, or comma-separated)")
	return cmd
}

func clusterUpgradeCommand(o *clientOptions) *cobra.Command {
	var req client.UpgradeRequest
	cmd := o.clusterAction("upgrade CLUSTER TEMPLATE [--nodegroup NAME]", "Move a cluster (or one node group) to another cluster template", "upgrade", cobra.ExactArgs(2),
		func(_ *cobra.Command, args []string) error {
			req.ClusterTemplate = args[1]
			return nil
		},
		func(ctx context.Context, c *client.Client, args []string) (string, error) {
			return c.UpgradeCluster(ctx, args[0], req)
		})
	cmd.Flags().StringVar(&req.NodeGroup, "nodegroup", "", "node group to upgrade (default: the whole cluster)")
	cmd.Flags().IntVar(&req.MaxBatchSize, "max-batch-size", 0, "nodes upgraded at a time")
	return cmd
}

func clusterRebaseCommand(o *clientOptions) *cobra.Command {
	return o.clusterAction("rebase CLUSTER", "Move a cluster adopted from magnum-cluster-api onto Magnetite's own ClusterClass; Cluster API replaces every machine (docs/deploy.md)", "rebase", cobra.ExactArgs(1),
		nil,
		func(ctx context.Context, c *client.Client, args []string) (string, error) {
			return c.RebaseCluster(ctx, args[0])
		})
}

func clusterDeleteCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete CLUSTER...", Short: "Delete clusters; with --wait, until they are gone", Args: cobra.MinimumNArgs(1)}
	return o.waiting(cmd, "wait", "wait-timeout", func(cmd *cobra.Command, c *client.Client, args []string, w waitFlags) error {
		err := deleteEach(cmd, args, "Request to delete cluster %s has been accepted.", func(ident string) error {
			return c.DeleteCluster(cmd.Context(), ident)
		})
		if err != nil || !w.wait {
			return err
		}
		for _, ident := range args {
			if err := o.watch(cmd, c, ident, w, untilGone); err != nil {
				return err
			}
		}
		return nil
	})
}
