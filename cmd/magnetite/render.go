package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/driver"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/driver/capi"
	"github.com/magnetite-io/magnetite/internal/labels"
	"github.com/magnetite-io/magnetite/internal/model"
)

// validateLabels is the API's label check: every value against the typed
// schema, and no template-scope label changed below the template.
func validateLabels(ct *model.ClusterTemplate, l map[string]string) error {
	return labels.Check(ct.Labels, l)
}

func renderCommand() *cobra.Command {
	var templateFile, clusterFile, factsFile, driverName, namespace string
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
provides; warnings also go to standard error.`,
		Example: `  magnetite render --template k8s-bm.yaml --cluster metal.yaml --facts cloud.yaml
  magnetite render --template k8s.yaml --cluster c.yaml --facts cloud.yaml --preview | kubectl apply --dry-run=server -f -`,
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
			reg, err := builtin.Registry(capi.Options{DefaultBootVolumeSize: bootVolume}, "openstack")
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
			out, err := renderDocument(drv.Name(), res, preview)
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
	withAddons.register(f)
	_ = cmd.MarkFlagRequired("template")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

// renderDocument writes a render as YAML documents behind a comment header
// saying what the conductor provides.
func renderDocument(driverName string, res *driver.Result, preview bool) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# rendered by %s\n", driverName)
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
