package backend

import (
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"
	"github.com/magnetite-io/magnetite/internal/baremetal/ironic"
	"github.com/magnetite-io/magnetite/internal/baremetal/metal3"
	"github.com/magnetite-io/magnetite/internal/config"
	"github.com/magnetite-io/magnetite/internal/driver/builtin"
	"github.com/magnetite-io/magnetite/internal/mgmt"
)

// Settings are the [baremetal] options that are not the backend's own.
type Settings struct {
	ReconcileInterval time.Duration
	// ActionWait bounds how long a host action's request waits for it.
	ActionWait time.Duration
}

var microversion = regexp.MustCompile(`^1\.[0-9]{1,3}$`)

// FromConfig builds the configured backend; nil when [baremetal] backend is
// none. Every [baremetal] value is checked here, with the option named.
func FromConfig(cfg *config.Config, log *slog.Logger) (baremetal.Backend, Settings, error) {
	opt := func(name string) string { return cfg.String("baremetal", name) }
	bad := func(name, format string, args ...any) error {
		return fmt.Errorf("config: [baremetal] %s = %q %s", name, opt(name), fmt.Sprintf(format, args...))
	}
	duration := func(name string) (time.Duration, error) {
		d, err := time.ParseDuration(opt(name))
		if err != nil || d <= 0 {
			return 0, bad(name, "is not a positive duration such as 15s")
		}
		return d, nil
	}
	var s Settings
	var err error
	if s.ReconcileInterval, err = duration("reconcile_interval"); err != nil {
		return nil, s, err
	}
	if s.ActionWait, err = duration("action_wait"); err != nil {
		return nil, s, err
	}
	switch opt("backend") {
	case "none", "":
		return nil, s, nil
	case "metal3":
		return metal3FromConfig(cfg, s, log)
	case "ironic":
	default:
		return nil, s, bad("backend", "must be none, ironic or metal3")
	}
	timeout, err := duration("ironic_timeout")
	if err != nil {
		return nil, s, err
	}
	fake, err := strconv.ParseBool(opt("ironic_fake_hardware"))
	if err != nil {
		return nil, s, bad("ironic_fake_hardware", "must be true or false")
	}
	if v := opt("ironic_api_version"); !microversion.MatchString(v) {
		return nil, s, bad("ironic_api_version", "is not an Ironic microversion such as %s", ironic.DefaultAPIVersion)
	}
	if rc := opt("default_resource_class"); !baremetal.ValidResourceClass(rc) {
		return nil, s, bad("default_resource_class", "must be 1 to 80 letters, digits, '.', '_' or '-'")
	}
	if opt("ironic_auth_type") == "http_basic" && (opt("ironic_username") == "" || opt("ironic_password") == "") {
		return nil, s, fmt.Errorf("config: [baremetal] ironic_auth_type = http_basic needs ironic_username and ironic_password")
	}
	b, err := ironic.New(ironic.Config{
		Endpoint: opt("ironic_endpoint"), APIVersion: opt("ironic_api_version"),
		AuthType: opt("ironic_auth_type"), Username: opt("ironic_username"), Password: opt("ironic_password"),
		Timeout: timeout, DeployInterface: opt("ironic_deploy_interface"), InspectInterface: opt("ironic_inspect_interface"),
		FakeHardware: fake, DeployKernel: opt("deploy_kernel"), DeployRamdisk: opt("deploy_ramdisk"),
		DefaultResourceClass: opt("default_resource_class"), Log: log,
	})
	if err != nil {
		return nil, s, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "baremetal: "))
	}
	return b, s, nil
}

func metal3FromConfig(cfg *config.Config, s Settings, log *slog.Logger) (baremetal.Backend, Settings, error) {
	if rc := cfg.String("baremetal", "default_resource_class"); !baremetal.ValidResourceClass(rc) {
		return nil, s, fmt.Errorf("config: [baremetal] default_resource_class = %q must be 1 to 80 letters, digits, '.', '_' or '-'", rc)
	}
	// The same kinds as the conductor's client, so that an
	// [management] api_resources naming an infrastructure kind holds here too.
	opts := mgmt.OptionsFromConfig(cfg)
	opts.Log = log
	opts.Kinds = builtin.Kinds()
	mc, err := mgmt.New(opts)
	if err != nil {
		return nil, s, fmt.Errorf("config: [baremetal] backend = metal3 needs the management cluster: %w", err)
	}
	b, err := metal3.New(metal3.Config{Client: mc, Namespace: cfg.String("baremetal", "metal3_namespace"),
		DefaultResourceClass: cfg.String("baremetal", "default_resource_class"), Log: log})
	if err != nil {
		return nil, s, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "baremetal: "))
	}
	return b, s, nil
}
