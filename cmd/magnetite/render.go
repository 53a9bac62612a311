package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/driver/capi/inmemory"
	"github.com/magnetite-io/magnetite/internal/kinds"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/mgmt"
	"github.com/magnetite-io/magnetite/internal/model"
)

// validateLabels is the API's label check: every value against the typed
// schema, and no template-scope label changed below the template.
func validateLabels(ct *model.ClusterTemplate, l map[string]string) error {
	return labels.Check(ct.Labels, l)
}

// driverLabels runs the label checks of the template's driver (the size of
// the extra_files in the nodes' user data) once the schema's have passed.
func driverLabels(drivers *driver.Registry) func(*model.ClusterTemplate, map[string]string) error {
	return func(ct *model.ClusterTemplate, l map[string]string) error {
		if err := validateLabels(ct, l); err != nil {
			return err
		}
		d, err := drivers.ForTemplate(ct, "")
		if err != nil {
			// The image's os_distro is known to the conductor only; the
			// infrastructure, which bounds the user data, is the same for
			// every distribution, and most images boot a cloud-config.
			if d, err = drivers.ForTemplate(ct, "ubuntu"); err != nil {
				return nil // the API's driver check says so
			}
		}
		if lc, ok := d.(driver.LabelChecker); ok {
			return lc.CheckLabels(ct, l)
		}
		return nil
	}
}

func renderCommand() *cobra.Command {
	var templateFile, clusterFile, factsFile, driverName, namespace, kubeconfig, apiVersions string
	var preview bool
	var bootVolume int
	var withAddons renderAddonFlags
	cmd := &cobra.Command{
		Use:   "render --template T.yaml --cluster C.yaml [--facts F.yaml]",
		Short: "Show the Cluster API objects a template and cluster would produce, without creating anything",
		Long: `render reads a cluster template and a cluster (with its node groups) written
with Magnum's field names, and the cloud facts the conductor would read
(flavors with extra specs, images with os_distro and kube_version, networks
with port_security_enabled), and prints the objects Magnetite would apply,
as YAML, or every reason the cluster cannot be built.

The cluster file takes create-time fields too: master_count, node_count and
a "nodegroups" list; labels merge over the template's unless merge_labels is
false. The header lists the Secrets and server groups the conductor
provides; warnings also go to standard error.

Objects are written at the API versions a management cluster serves, as the
conductor writes them: --kubeconfig asks that cluster (CAPO v0.12-v0.14 serve
infrastructure v1beta1, v0.15 and newer v1beta2), --api-versions names them
without one, by API group or by kind, and overrides what discovery found.
Without either, every kind is written at its newest version (v1beta2).`,
		Example: `  magnetite render --template k8s-bm.yaml --cluster metal.yaml --facts cloud.yaml
  magnetite render --template k8s.yaml --cluster c.yaml --facts cloud.yaml --preview | kubectl apply --dry-run=server -f -
  magnetite render --template k8s.yaml --cluster c.yaml --facts cloud.yaml --kubeconfig mgmt.kubeconfig | kubectl apply --dry-run=server -f -
  magnetite render --template k8s.yaml --cluster c.yaml --facts cloud.yaml --api-versions infrastructure.cluster.x-k8s.io/v1beta1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			read := func(path string) ([]byte, error) {
				if path == "" {
					return nil, nil
				}
				if path == "-" {
					return io.ReadAll(cmd.InOrStdin())
				}
				return os.ReadFile(path)
			}
			tdoc, err := read(templateFile)
			if err != nil {
				return err
			}
			cdoc, err := read(clusterFile)
			if err != nil {
				return err
			}
			fdoc, err := read(factsFile)
			if err != nil {
				return err
			}
			req, err := driver.DecodeRequest(tdoc, cdoc, fdoc)
			if err != nil {
				return err
			}
			req.Namespace = namespace
			var versionsFrom string
			req.APIVersions, versionsFrom, err = renderAPIVersions(cmd.Context(), kubeconfig, apiVersions)
			if err != nil {
				return err
			}
			reg, err := builtin.Registry(capi.Options{DefaultBootVolumeSize: bootVolume}, "openstack", inmemory.Options{})
			if err != nil {
				return err
			}
			if driverName != "" {
				req.Template.Driver = &driverName
			}
			distro := ""
			if img, ok := req.Facts.Image(req.Template.ImageID); ok {
				distro = img.OSDistro()
			}
			drv, err := reg.ForTemplate(req.Template, distro)
			if err != nil {
				return err
			}
			res, err := drv.Render(req)
			if err != nil {
				var ve *driver.ValidationError
				if errors.As(err, &ve) {
					return fmt.Errorf("the cluster cannot be rendered:\n  - %s", strings.Join(ve.Problems, "\n  - "))
				}
				return err
			}
			out, err := renderDocument(drv.Name(), versionsFrom, res, preview)
			if err != nil {
				return err
			}
			addonDocs, err := withAddons.render(cmd.Context(), res)
			if err != nil {
				return err
			}
			out = append(out, addonDocs...)
			for _, w := range res.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&templateFile, "template", "", "cluster template file, YAML or JSON (- for standard input)")
	f.StringVar(&clusterFile, "cluster", "", "cluster file with its node groups, YAML or JSON")
	f.StringVar(&factsFile, "facts", "", "cloud facts file: flavors, images, networks")
	f.StringVar(&driverName, "driver", "", "driver to use instead of the template's (capi-openstack, capi-inmemory, capi-metal3)")
	f.StringVar(&namespace, "namespace", "magnetite-system", "management-cluster namespace of the objects")
	f.IntVar(&bootVolume, "boot-volume-size", 0, "default root volume size in GiB for VM node groups without a boot_volume_size label")
	f.BoolVar(&preview, "preview", false, "also print the templates Cluster API derives for each machine group")
	f.StringVar(&kubeconfig, "kubeconfig", "", "management cluster whose served API versions the objects are written at")
	f.StringVar(&apiVersions, "api-versions", "", "API versions to write, comma-separated: group/version for every kind of a group, Kind=group/version for one kind (these win over --kubeconfig's)")
	withAddons.register(f)
	_ = cmd.MarkFlagRequired("template")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

// renderAPIVersions are the versions render writes each kind at, as the
// conductor would: those the management cluster at kubeconfig serves (when
// one is named), with the --api-versions entries over them. It also says
// where they came from, for the header.
func renderAPIVersions(ctx context.Context, kubeconfig, flag string) (map[string]string, string, error) {
	table, err := kinds.NewTable(mgmt.BaseKinds, builtin.Kinds())
	if err != nil {
		return nil, "", err
	}
	overrides, err := parseAPIVersions(flag, table)
	if err != nil {
		return nil, "", err
	}
	served := map[string]string{}
	from := "the newest of each kind (no --kubeconfig or --api-versions)"
	if kubeconfig != "" {
		mc, err := mgmt.New(mgmt.Options{Kubeconfig: kubeconfig, Kinds: builtin.Kinds()})
		if err != nil {
			return nil, "", err
		}
		if served, err = mc.APIVersions(ctx); err != nil {
			return nil, "", err
		}
		from = "served by the management cluster of " + kubeconfig
	}
	for kind, gv := range overrides {
		served[kind] = gv.String()
	}
	if len(overrides) > 0 {
		if kubeconfig != "" {
			from += ", "
		} else {
			from = ""
		}
		from += "--api-versions " + flag
	}
	return served, from, nil
}

// parseAPIVersions reads --api-versions: comma-separated group/version
// entries, each for every kind Magnetite writes in that group, and
// Kind=group/version entries (the syntax of [management] api_resources),
// which win over their group's.
func parseAPIVersions(flag string, table kinds.Table) (map[string]schema.GroupVersion, error) {
	var groups []schema.GroupVersion
	var perKind []string
	for _, item := range strings.Split(flag, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
		case strings.Contains(item, "="):
			perKind = append(perKind, item)
		default:
			gv, err := schema.ParseGroupVersion(item)
			if err != nil || gv.Group == "" || gv.Version == "" {
				return nil, fmt.Errorf("--api-versions entry %q is neither group/version nor Kind=group/version", item)
			}
			groups = append(groups, gv)
		}
	}
	out := map[string]schema.GroupVersion{}
	for _, gv := range groups {
		found := false
		for _, name := range table.Names() {
			if table[name].Group == gv.Group {
				out[name], found = gv, true
			}
		}
		if !found {
			return nil, fmt.Errorf("--api-versions names API group %q, of which Magnetite writes no kind", gv.Group)
		}
	}
	kindVersions, err := mgmt.ParseAPIResources(strings.Join(perKind, ","), table)
	if err != nil {
		return nil, fmt.Errorf("--api-versions: %w", err)
	}
	maps.Copy(out, kindVersions)
	return out, nil
}

// renderDocument writes a render as YAML documents behind a comment header
// saying where the API versions came from and what the conductor provides.
func renderDocument(driverName, versionsFrom string, res *driver.Result, preview bool) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# rendered by %s\n", driverName)
	fmt.Fprintf(&b, "# API versions: %s\n", versionsFrom)
	b.WriteString(res.Summary())
	objs := res.Objects
	if preview {
		p, err := capi.Preview(res.Objects)
		if err != nil {
			return nil, err
		}
		objs = append(objs[:len(objs):len(objs)], p...)
	}
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}
