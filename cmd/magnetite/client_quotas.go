package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/client"
)

func quotaCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "quota", Aliases: []string{"quotas"}, Short: "Manage per-project cluster quotas (openstack coe quotas)"}
	var project, resource string
	var hardLimit int
	// create, update, show and delete name a project's quota on a resource.
	keyed := func(use, short string, withLimit bool, run func(cmd *cobra.Command, c *client.Client) error) *cobra.Command {
		sub := &cobra.Command{
			Use: use, Short: short, Args: cobra.NoArgs,
			RunE: o.connected(func(cmd *cobra.Command, c *client.Client, _ []string) error {
				return run(cmd, c)
			}),
		}
		sub.Flags().StringVar(&project, "project-id", "", "project the quota applies to (required)")
		sub.Flags().StringVar(&resource, "resource", "Cluster", "resource limited")
		_ = sub.MarkFlagRequired("project-id")
		if withLimit {
			sub.Flags().IntVar(&hardLimit, "hard-limit", 1, "most clusters the project may have")
		}
		return sub
	}
	cmd.AddCommand(
		keyed("create --project-id PROJECT [--resource Cluster] --hard-limit N", "Set a project's quota (admin)", true, func(cmd *cobra.Command, c *client.Client) error {
			q, err := c.CreateQuota(cmd.Context(), project, resource, hardLimit)
			return o.printed(cmd, q, err)
		}),
		keyed("update --project-id PROJECT [--resource Cluster] --hard-limit N", "Change a project's quota (admin)", true, func(cmd *cobra.Command, c *client.Client) error {
			q, err := c.UpdateQuota(cmd.Context(), project, resource, hardLimit)
			return o.printed(cmd, q, err)
		}),
		keyed("show --project-id PROJECT [--resource Cluster]", "Show a project's quota", false, func(cmd *cobra.Command, c *client.Client) error {
			q, err := c.GetQuota(cmd.Context(), project, resource)
			return o.printed(cmd, q, err)
		}),
		keyed("delete --project-id PROJECT [--resource Cluster]", "Remove a project's quota; the default applies again (admin)", false, func(cmd *cobra.Command, c *client.Client) error {
			return deleteEach(cmd, []string{project + "/" + resource}, "Quota %s deleted.", func(string) error {
				return c.DeleteQuota(cmd.Context(), project, resource)
			})
		}),
		quotaListCommand(o),
	)
	return cmd
}

func quotaListCommand(o *clientOptions) *cobra.Command {
	var lo client.ListOptions
	var all bool
	cmd := o.listed("list", "List quotas", cobra.NoArgs, &lo, func(ctx context.Context, c *client.Client, _ []string) (any, error) {
		return c.ListQuotas(ctx, lo, all)
	}, "project_id", "resource", "hard_limit")
	cmd.Flags().BoolVar(&all, "all-tenants", false, "every project's quotas (admin)")
	return cmd
}

func statsCommand(o *clientOptions) *cobra.Command {
	var project string
	cmd := o.shown("stats", "Count clusters and nodes (openstack coe stats list)", cobra.NoArgs, func(ctx context.Context, c *client.Client, _ []string) (any, error) {
		return c.Stats(ctx, project)
	})
	cmd.Flags().StringVar(&project, "project-id", "", "count one project's (admins see every project's by default)")
	return cmd
}

func serviceCommand(o *clientOptions) *cobra.Command {
	return group("service", "Magnetite processes (openstack coe service)", &cobra.Command{
		Use:   "list",
		Short: "List the Magnetite processes and whether they are up",
		Args:  cobra.NoArgs,
		RunE: o.connected(func(cmd *cobra.Command, c *client.Client, _ []string) error {
			svcs, err := c.ListServices(cmd.Context())
			return o.printedList(cmd, svcs, err, "id", "host", "binary", "state", "disabled", "disabled_reason", "report_count", "updated_at")
		}),
	})
}
