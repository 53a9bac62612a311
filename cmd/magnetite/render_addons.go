package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/magnetite-io/magnetite/internal/addons"
	"github.com/magnetite-io/magnetite/internal/addons/charts"
	"github.com/magnetite-io/magnetite/internal/driver"
)

// renderAddonFlags are render's --addons options: what the conductor
// takes from [addons] source and [cluster_credentials].
type renderAddonFlags struct {
	enabled bool
	source  string
	authURL string
	caFile  string
}

func (a *renderAddonFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&a.enabled, "addons", false, "also print the addon objects the cluster would get, rendered from their pinned charts")
	f.StringVar(&a.source, "addons-source", charts.Upstream, "chart source for --addons, as [addons] source: upstream, an http(s):// chart repository, an oci:// registry or an absolute directory")
	f.StringVar(&a.authURL, "keystone-auth-url", "", "Keystone endpoint k8s-keystone-auth calls, as [cluster_credentials] auth_url")
	f.StringVar(&a.caFile, "keystone-ca-file", "", "PEM CA of that endpoint, as [cluster_credentials] ca_file")
}

// render renders the cluster's addon releases from their charts as the
// conductor does, each release behind a comment naming its charts and
// where they were read.
func (a *renderAddonFlags) render(ctx context.Context, res *driver.Result) ([]byte, error) {
	if !a.enabled {
		return nil, nil
	}
	src, err := charts.ParseSource(a.source, time.Minute)
	if err != nil {
		return nil, err
	}
	var ca []byte
	if a.caFile != "" {
		if ca, err = os.ReadFile(a.caFile); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	for _, rel := range res.Addons {
		if rel.Addon == addons.KeystoneAuth && a.authURL == "" {
			return nil, fmt.Errorf("the cluster gets k8s-keystone-auth, which needs the Keystone endpoint: pass --keystone-auth-url (the conductor's [cluster_credentials] auth_url)")
		}
		docs, err := src.Render(ctx, rel.WithKeystone(a.authURL, ca))
		if err != nil {
			return nil, fmt.Errorf("addon %s %s: %w", rel.Addon, rel.Version(), err)
		}
		for _, c := range rel.Pin.Charts {
			fmt.Fprintf(&b, "# addon %s %s: chart %s from %s\n", rel.Addon, rel.Version(), c, src.Where(c))
		}
		for _, d := range docs {
			b.WriteString("---\n")
			b.WriteString(d)
		}
	}
	return b.Bytes(), nil
}
