package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/addons/charts"
	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/mgmt"
)

func addonsCommand(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "addons",
		Short: "The addons every cluster gets: the pinned charts, and mirroring them for air-gapped clouds",
	}
	cmd.AddCommand(addonsListCommand(g), addonsMirrorCommand(g))
	return cmd
}

func addonsListCommand(g *globalFlags) *cobra.Command {
	var kube string
	var clusters bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show the pinned addon charts per Kubernetes minor, and what each cluster got",
		Long: `list prints the pinned table: for each addon and Kubernetes minor, the software
version, the upstream charts and where they are pulled from under [addons] source.
With --clusters it also reads the management cluster ([management] kubeconfig)
and prints, per cluster, the addons its ClusterResourceSet delivers: the charts
each ConfigMap was rendered from, or the operator's own ConfigMap.`,
		Args: cobra.NoArgs,
		RunE: g.configured(func(cmd *cobra.Command, cfg *config.Config, _ []string) error {
			src, err := addonSource(cfg)
			if err != nil {
				return err
			}
			if err := printPins(cmd.OutOrStdout(), src, addons.Minor(kube)); err != nil {
				return err
			}
			if !clusters {
				return nil
			}
			mc, err := mgmt.New(managementOptions(cfg))
			if err != nil {
				return fmt.Errorf("management cluster: %w", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			fmt.Fprintln(cmd.OutOrStdout())
			return printClusterAddons(ctx, cmd.OutOrStdout(), mc)
		}),
	}
	cmd.Flags().StringVar(&kube, "kube-version", "", "show only this Kubernetes minor (v1.33 or v1.33.1)")
	cmd.Flags().BoolVar(&clusters, "clusters", false, "also show what each cluster's ClusterResourceSet delivers (reads the management cluster)")
	return cmd
}

func printPins(w io.Writer, src *charts.Source, minor string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDON\tKUBERNETES\tVERSION\tCHARTS\tFROM")
	for _, p := range addons.Table() {
		if minor != "" && p.Minor != minor {
			continue
		}
		var cs, from []string
		for _, c := range p.Charts {
			cs = append(cs, c.String())
			from = append(from, src.Where(c))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Addon, p.Minor, p.AppVersion, strings.Join(cs, ", "), strings.Join(uniq(from), ", "))
	}
	return tw.Flush()
}

func uniq(ss []string) []string {
	var out []string
	for _, s := range ss {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// printClusterAddons lists, per cluster, what its ClusterResourceSet
// delivers, from the objects in the management cluster.
func printClusterAddons(ctx context.Context, w io.Writer, mc *mgmt.Client) error {
	sets, err := mc.List(ctx, "ClusterResourceSet", "", mgmt.ManagedSelector)
	if err != nil {
		return err
	}
	cms, err := mc.List(ctx, "ConfigMap", "", mgmt.ManagedSelector+","+driver.LabelAddon)
	if err != nil {
		return err
	}
	byName := map[string]unstructured.Unstructured{}
	for _, cm := range cms {
		byName[cm.GetNamespace()+"/"+cm.GetName()] = cm
	}
	sort.Slice(sets, func(i, j int) bool {
		return sets[i].GetNamespace()+sets[i].GetName() < sets[j].GetNamespace()+sets[j].GetName()
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tNAMESPACE\tADDON\tDELIVERED")
	for _, s := range sets {
		id := s.GetLabels()[mgmt.LabelClusterUUID]
		rs, _, _ := unstructured.NestedSlice(s.Object, "spec", "resources")
		for _, r := range rs {
			ref, _ := r.(map[string]any)
			name, _ := ref["name"].(string)
			if ref["kind"] != "ConfigMap" {
				continue
			}
			cm, ours := byName[s.GetNamespace()+"/"+name]
			switch {
			case ours:
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", id, s.GetNamespace(), cm.GetLabels()[driver.LabelAddon], cm.GetAnnotations()[driver.AnnotationAddonCharts])
			case strings.HasPrefix(name, "magnetite-addon-"):
				addon := strings.TrimPrefix(name, "magnetite-addon-")
				for _, a := range addons.Names {
					if strings.HasPrefix(addon, a+"-") {
						addon = a
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", id, s.GetNamespace(), addon, "the operator's ConfigMap "+name)
			}
		}
	}
	return tw.Flush()
}

func addonsMirrorCommand(g *globalFlags) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "mirror DIR",
		Short: "Download every pinned addon chart into DIR, a chart repository with digests, for air-gapped clouds",
		Long: `mirror downloads every chart the addon table pins (all addons, all Kubernetes
minors) from [addons] source (or --from) into DIR, and writes DIR/index.yaml
listing each archive with its sha256 digest. Copy DIR to the cloud and set
[addons] source = DIR, or serve it with any web server and set source to its URL.
Nothing is written unless every chart was found.`,
		Args: cobra.ExactArgs(1),
		RunE: g.configured(func(cmd *cobra.Command, cfg *config.Config, args []string) error {
			if from != "" {
				cfg.Override("addons", "source", from, "--from")
			}
			src, err := addonSource(cfg)
			if err != nil {
				return err
			}
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			got, err := src.Mirror(cmd.Context(), dir, addons.Charts())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CHART\tVERSION\tSHA256\tFROM")
			for _, m := range got {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Chart.Name, m.Chart.Version, m.Digest, m.From)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "\n%d charts and index.yaml in %s; set [addons] source = %s\n", len(got), dir, dir)
			return err
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "source to download from instead of [addons] source (upstream, a URL or a directory)")
	return cmd
}
