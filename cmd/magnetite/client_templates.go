package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/client"
)

func templateCommand(o *clientOptions) *cobra.Command {
	cmd := group("template", "Manage cluster templates (openstack coe cluster template)",
		templateCreateCommand(o), templateListCommand(o), templateShowCommand(o),
		templateUpdateCommand(o), templateDeleteCommand(o))
	cmd.Aliases = []string{"cluster-template"}
	return cmd
}

func templateCreateCommand(o *clientOptions) *cobra.Command {
	var labels, tags []string
	var str = map[string]*string{}
	var dockerVolumeSize int
	var tlsDisabled, public, registry, masterLB bool
	var floatingIP, hidden func(body map[string]any) error
	cmd := prepared(o, &cobra.Command{
		Use:   "create NAME --coe kubernetes --image IMAGE --external-network NET [flags]",
		Short: "Create a cluster template",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) (map[string]any, error) {
		body := map[string]any{"name": args[0]}
		for flag, field := range templateStringFields {
			setIf(cmd, body, flag, field, *str[flag])
		}
		setIf(cmd, body, "docker-volume-size", "docker_volume_size", dockerVolumeSize)
		setIf(cmd, body, "tls-disabled", "tls_disabled", tlsDisabled)
		setIf(cmd, body, "public", "public", public)
		setIf(cmd, body, "registry-enabled", "registry_enabled", registry)
		setIf(cmd, body, "master-lb-enabled", "master_lb_enabled", masterLB)
		if len(tags) > 0 {
			body["tags"] = strings.Join(tags, ",")
		}
		return body, errors.Join(floatingIP(body), hidden(body), putLabels(body, labels))
	}, func(cmd *cobra.Command, c *client.Client, _ []string, body map[string]any) error {
		t, err := c.CreateTemplate(cmd.Context(), body)
		return o.printed(cmd, t, err)
	})
	f := cmd.Flags()
	for flag := range templateStringFields {
		str[flag] = f.String(flag, "", templateFlagHelp[flag])
	}
	f.IntVar(&dockerVolumeSize, "docker-volume-size", 0, "size in GB of the container volume of each node")
	f.StringArrayVar(&labels, "labels", nil, "KEY1=VALUE1,KEY2=VALUE2;KEY3=VALUE3... or one --labels per pair")
	f.StringArrayVar(&tags, "tags", nil, "tags (repeat, or comma-separated)")
	f.BoolVar(&tlsDisabled, "tls-disabled", false, "disable TLS in the cluster")
	f.BoolVar(&public, "public", false, "make the template visible to every project (admin)")
	f.BoolVar(&registry, "registry-enabled", false, "enable the docker registry in the cluster")
	f.BoolVar(&masterLB, "master-lb-enabled", false, "put a load balancer in front of the control plane")
	floatingIP = floatingIPFlags(cmd)
	hidden = toggle(cmd, "hidden", "visible", "hidden", "hide the template from listings (admin)", "show the template in listings")
	return cmd
}

// templateStringFields maps create flags that take a string to API fields.
var templateStringFields = map[string]string{
	"coe": "coe", "image": "image_id", "external-network": "external_network_id", "keypair": "keypair_id",
	"fixed-network": "fixed_network", "fixed-subnet": "fixed_subnet", "network-driver": "network_driver",
	"volume-driver": "volume_driver", "driver": "driver", "dns-nameserver": "dns_nameserver", "flavor": "flavor_id",
	"master-flavor": "master_flavor_id", "docker-storage-driver": "docker_storage_driver",
	"http-proxy": "http_proxy", "https-proxy": "https_proxy", "no-proxy": "no_proxy",
	"insecure-registry": "insecure_registry", "server-type": "server_type",
}

var templateFlagHelp = map[string]string{
	"coe": "container orchestration engine: kubernetes", "image": "Glance image name or UUID of the nodes",
	"external-network": "external network for floating IPs and load balancers", "keypair": "Nova keypair for node access",
	"fixed-network": "private network of the nodes", "fixed-subnet": "private subnet of the nodes",
	"network-driver": "CNI: calico, cilium, flannel", "volume-driver": "volume driver: cinder",
	"driver": "cluster driver name", "dns-nameserver": "DNS server of the cluster network",
	"flavor": "Nova flavor of worker nodes", "master-flavor": "Nova flavor of control plane nodes",
	"docker-storage-driver": "container storage driver", "http-proxy": "HTTP proxy for the nodes",
	"https-proxy": "HTTPS proxy for the nodes", "no-proxy": "hosts that bypass the proxy",
	"insecure-registry": "URL of an insecure registry", "server-type": "vm (virtual machines) or bm (bare metal)",
}

func templateListCommand(o *clientOptions) *cobra.Command {
	var lo client.ListOptions
	return o.listed("list", "List cluster templates", cobra.NoArgs, &lo, func(ctx context.Context, c *client.Client, _ []string) (any, error) {
		return c.ListTemplates(ctx, lo)
	}, "uuid", "name", "server_type", "coe", "public", "hidden")
}

func listFlags(cmd *cobra.Command, lo *client.ListOptions) {
	cmd.Flags().IntVar(&lo.Limit, "limit", 0, "return at most this many (default: every page)")
	cmd.Flags().StringVar(&lo.SortKey, "sort-key", "", "field to sort by")
	cmd.Flags().StringVar(&lo.SortDir, "sort-dir", "", "asc or desc")
}

func templateShowCommand(o *clientOptions) *cobra.Command {
	return o.shown("show TEMPLATE", "Show a cluster template", cobra.ExactArgs(1), func(ctx context.Context, c *client.Client, args []string) (any, error) {
		return c.GetTemplate(ctx, args[0])
	})
}

func templateUpdateCommand(o *clientOptions) *cobra.Command {
	return o.updated("update TEMPLATE add|replace|remove ATTRIBUTE=VALUE...", "Change a cluster template (e.g. update k8s replace labels=kube_tag=v1.31.1)", 1,
		func(ctx context.Context, c *client.Client, idents []string, patch []client.PatchOp) (any, error) {
			return c.UpdateTemplate(ctx, idents[0], patch)
		})
}

func templateDeleteCommand(o *clientOptions) *cobra.Command {
	return o.deleted("delete TEMPLATE...", "Delete cluster templates no cluster uses", 0, "Cluster template %s deleted.",
		func(ctx context.Context, c *client.Client, _ []string, ident string) error {
			return c.DeleteTemplate(ctx, ident)
		})
}

// deleteEach deletes every object named, reporting each with the done
// format, and fails when any deletion failed (as openstack coe does).
func deleteEach(cmd *cobra.Command, idents []string, done string, del func(string) error) error {
	failed := 0
	for _, id := range idents {
		if err := del(id); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "Delete of %s failed: %v\n", id, err)
			failed++
			continue
		}
		fmt.Fprintf(cmd.OutOrStdout(), done+"\n", id)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d deletions failed", failed, len(idents))
	}
	return nil
}
