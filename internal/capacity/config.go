package capacity

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/magnetite-io/magnetite/internal/config"
)

// FromConfig builds the capacity preflight of [baremetal] capacity_check
// over hosts (nil when there is no inventory or the check is off); catalog
// finds Nova when compute_endpoint is empty (nil without Keystone).
func FromConfig(cfg *config.Config, hosts HostCounter, catalog Catalog, log *slog.Logger) (*Check, error) {
	mode := cfg.String("baremetal", "capacity_check")
	switch mode {
	case CheckRefuse, CheckWarn, CheckOff:
	default:
		return nil, fmt.Errorf("config: [baremetal] capacity_check = %q must be refuse, warn or off", mode)
	}
	ep := cfg.String("baremetal", "compute_endpoint")
	if ep != "" && !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://") {
		return nil, fmt.Errorf("config: [baremetal] compute_endpoint = %q must be an http:// or https:// URL", ep)
	}
	if hosts == nil || mode == CheckOff {
		return nil, nil
	}
	cc := &Check{Mode: mode, Hosts: hosts, DefaultResourceClass: cfg.String("baremetal", "default_resource_class"), Log: log}
	if ep != "" || catalog != nil {
		cc.Flavors = &NovaFlavors{Endpoint: ep, Catalog: catalog}
	}
	return cc, nil
}
