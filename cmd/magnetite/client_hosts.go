package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/client"
)

// The host commands drive /v1/hosts, the bare-metal host inventory. A
// change answers with the host as the backend left it, or 202 with an
// operation the conductor is still carrying out: that is followed through
// GET /v1/hosts/operations/{uuid} until it ends, or printed as it is with
// --no-wait.

func hostCommand(o *clientOptions) *cobra.Command {
	return group("host", "Manage the bare-metal host inventory (/v1/hosts, administrators)",
		hostListCommand(o),
		o.shown("show HOST", "Show a host", cobra.ExactArgs(1), func(ctx context.Context, c *client.Client, args []string) (any, error) {
			return c.GetHost(ctx, args[0])
		}),
		hostEnrollCommand(o), hostPowerCommand(o), hostRebootCommand(o),
		o.hostAction("inspect HOST", "Inspect a manageable host's hardware", nil),
		o.hostAction("provide HOST", "Make a manageable host available for deployment (cleaning it first unless its cleaning mode is disabled)", nil),
		hostDetachCommand(o),
		o.hostAction("attach HOST", "Give a detached host back to the backend's management", nil),
		hostCleaningModeCommand(o), hostDeleteCommand(o), hostOperationCommand(o), validateBMCCommand())
}

func hostListCommand(o *clientOptions) *cobra.Command {
	var labels []string
	cmd := o.listed("list [--label KEY=VALUE]...", "List hosts (those carrying every --label given)", cobra.NoArgs, nil, func(ctx context.Context, c *client.Client, _ []string) (any, error) {
		return c.ListHosts(ctx, labels)
	}, "uuid", "name", "state", "power_state", "resource_class", "bmc_address", "detached", "error_message")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "KEY=VALUE the hosts must carry (repeat for several)")
	return cmd
}

// hostChange is a command that changes a host: body reads the flags and
// arguments into the request body before anything is asked, change asks;
// the answer is shown by hostOutcome.
func (o *clientOptions) hostChange(use, short string, args cobra.PositionalArgs, body func(cmd *cobra.Command, args []string) (any, error),
	change func(ctx context.Context, c *client.Client, args []string, body any) (*client.HostAnswer, error)) *cobra.Command {
	var w waitFlags
	cmd := prepared(o, &cobra.Command{Use: use, Short: short, Args: args}, body,
		func(cmd *cobra.Command, c *client.Client, args []string, in any) error {
			a, err := change(cmd.Context(), c, args, in)
			if err != nil {
				return err
			}
			return o.hostOutcome(cmd, c, a, args[0], w)
		})
	cmd.Flags().BoolVar(&w.noWait, "no-wait", false, "when the service answers with an operation still under way, print it and return instead of following it")
	w.bindTimeout(cmd, "wait-timeout", "follow the operation until it ends")
	return cmd
}

// hostAction is a command for the action named by the first word of use
// (power, inspect ...; cleaning-mode is the API's cleaning_mode), taking as
// many arguments as use names, with the request body body returns (nil:
// none).
func (o *clientOptions) hostAction(use, short string, body func(cmd *cobra.Command, args []string) (any, error)) *cobra.Command {
	name, _, _ := strings.Cut(use, " ")
	if body == nil {
		body = func(*cobra.Command, []string) (any, error) { return nil, nil }
	}
	return o.hostChange(use, short, cobra.ExactArgs(strings.Count(use, " ")), body,
		func(ctx context.Context, c *client.Client, args []string, in any) (*client.HostAnswer, error) {
			return c.HostAction(ctx, args[0], strings.ReplaceAll(name, "-", "_"), in)
		})
}

// hostOutcome prints what a change answered: the host; that the host is
// gone (a finished delete); or the operation, followed until it ends unless
// --no-wait.
func (o *clientOptions) hostOutcome(cmd *cobra.Command, c *client.Client, a *client.HostAnswer, ident string, w waitFlags) error {
	switch {
	case a.Host != nil:
		return o.printObject(cmd.OutOrStdout(), a.Host)
	case a.Operation == nil:
		fmt.Fprintf(cmd.OutOrStdout(), "Host %s deleted.\n", ident)
		return nil
	case w.noWait:
		return o.printObject(cmd.OutOrStdout(), a.Operation)
	}
	return o.followOperation(cmd, c, a.Operation, w)
}

// followOperation polls a host operation until it ends. A success prints
// the host it left (or that the host is gone); a failure is an error
// carrying the backend's explanation. While the operation waits for a retry
// the reason is shown on stderr, once per new reason.
func (o *clientOptions) followOperation(cmd *cobra.Command, c *client.Client, op *apitypes.HostOperation, w waitFlags) error {
	ctx := cmd.Context()
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	interval := w.interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	what := fmt.Sprintf("%s of host %s", strings.TrimPrefix(op.Type, "host_"), op.Host)
	reported := ""
	for {
		switch op.State {
		case "succeeded":
			h, err := c.GetHost(ctx, cmp.Or(op.HostUUID, op.Host))
			if op.Type == "host_delete" && (op.HostUUID == "" || client.IsNotFound(err)) {
				// Removed at once, or since the operation ended.
				fmt.Fprintf(cmd.OutOrStdout(), "Host %s deleted.\n", op.Host)
				return nil
			}
			return o.printed(cmd, h, err)
		case "failed":
			reason := op.LastError
			if reason == "" {
				reason = "no reason given"
			}
			return fmt.Errorf("%s failed: %s (operation %s)", what, reason, op.UUID)
		}
		if op.LastError != "" && op.LastError != reported {
			reported = op.LastError
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: attempt %d failed, trying again: %s\n", what, op.Attempts, op.LastError)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("gave up waiting for the %s after %s: operation %s is still %s", what, w.timeout, op.UUID, op.State)
			}
			return ctx.Err()
		case <-time.After(interval):
		}
		next, err := c.GetHostOperation(ctx, op.UUID)
		if err != nil {
			return err
		}
		op = next
	}
}

func hostEnrollCommand(o *clientOptions) *cobra.Command {
	var req apitypes.HostEnroll
	var passwordFile string
	var labels []string
	cmd := o.hostChange("enroll NAME --bmc-address ADDRESS --bmc-username USER --bmc-password-file FILE [flags]",
		"Add a host to the inventory; it is verified and, unless --target-state says otherwise, inspected, cleaned and made available", cobra.ExactArgs(1),
		func(cmd *cobra.Command, args []string) (any, error) {
			req.Name = args[0]
			password, err := readSecret(cmd.InOrStdin(), passwordFile)
			if err != nil {
				return nil, fmt.Errorf("--bmc-password-file: %w", err)
			}
			req.BMCPassword = password
			if len(labels) > 0 {
				if req.Labels, err = parseLabels(labels); err != nil {
					return nil, err
				}
			}
			return req, nil
		},
		func(ctx context.Context, c *client.Client, _ []string, in any) (*client.HostAnswer, error) {
			return c.EnrollHost(ctx, in.(apitypes.HostEnroll))
		})
	f := cmd.Flags()
	f.StringVar(&req.BMCAddress, "bmc-address", "", "BMC address, e.g. ipmi://10.0.0.5:623 or redfish+https://10.0.0.5/redfish/v1/Systems/1 (see host validate-bmc)")
	f.StringVar(&req.BMCUsername, "bmc-username", "", "BMC user name")
	f.StringVar(&passwordFile, "bmc-password-file", "", "file holding the BMC password (- for standard input); the password is never shown back")
	f.BoolVar(&req.DisableCertificateVerification, "disable-certificate-verification", false, "do not verify the BMC's TLS certificate")
	f.StringVar(&req.BootMACAddress, "boot-mac-address", "", "MAC address of the NIC the host boots from")
	f.StringVar(&req.BootMode, "boot-mode", "", "UEFI (default), UEFISecureBoot or legacy")
	f.StringArrayVar(&labels, "labels", nil, "KEY1=VALUE1,KEY2=VALUE2 or one --labels per pair")
	f.StringVar(&req.AutomatedCleaningMode, "cleaning-mode", "", "automated cleaning: metadata (default) or disabled")
	f.StringVar(&req.ResourceClass, "resource-class", "", "resource class bare-metal flavors ask for (default: the service's)")
	f.StringVar(&req.TargetState, "target-state", "", "where the host is taken: available (default) or manageable (verified and held)")
	f.StringVar(&req.ProjectID, "project-id", "", "project the host is assigned to (default: none, for every project)")
	for _, name := range []string{"bmc-address", "bmc-username", "bmc-password-file"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// readSecret reads a one-line secret from a file, or standard input for -.
func readSecret(stdin io.Reader, path string) (string, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(raw), "\r\n")
	if s == "" {
		return "", errors.New("the password is empty")
	}
	return s, nil
}

func hostPowerCommand(o *clientOptions) *cobra.Command {
	var soft bool
	cmd := o.hostAction("power HOST on|off", "Power a host on or off (--soft: ask the operating system to shut down)", func(_ *cobra.Command, args []string) (any, error) {
		if args[1] != "on" && args[1] != "off" {
			return nil, fmt.Errorf("power %q: choose on or off", args[1])
		}
		req := apitypes.HostPower{Target: args[1]}
		if soft {
			req.Mode = "soft"
		}
		return req, nil
	})
	cmd.Flags().BoolVar(&soft, "soft", false, "soft power off (ACPI), for off only")
	return cmd
}

func hostRebootCommand(o *clientOptions) *cobra.Command {
	var soft bool
	cmd := o.hostAction("reboot HOST", "Reboot a host (hard unless --soft)", func(*cobra.Command, []string) (any, error) {
		if soft {
			return apitypes.HostReboot{Mode: "soft"}, nil
		}
		return apitypes.HostReboot{}, nil
	})
	cmd.Flags().BoolVar(&soft, "soft", false, "soft reboot (ACPI)")
	return cmd
}

func hostDetachCommand(o *clientOptions) *cobra.Command {
	var req apitypes.HostDetach
	cmd := o.hostAction("detach HOST", "Take a host out of the backend's management (maintenance), keeping it in the inventory",
		func(*cobra.Command, []string) (any, error) { return req, nil })
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why, shown on the host")
	return cmd
}

func hostCleaningModeCommand(o *clientOptions) *cobra.Command {
	return o.hostAction("cleaning-mode HOST metadata|disabled", "Set a host's automated cleaning: metadata (wipe disk metadata between tenants) or disabled",
		func(_ *cobra.Command, args []string) (any, error) {
			return apitypes.HostCleaningMode{AutomatedCleaningMode: args[1]}, nil
		})
}

func hostDeleteCommand(o *clientOptions) *cobra.Command {
	var force bool
	cmd := o.hostChange("delete HOST", "Remove a host from the inventory (deprovisioned and cleaned first when deployed)", cobra.ExactArgs(1),
		func(*cobra.Command, []string) (any, error) { return nil, nil },
		func(ctx context.Context, c *client.Client, args []string, _ any) (*client.HostAnswer, error) {
			return c.DeleteHost(ctx, args[0], force)
		})
	cmd.Flags().BoolVar(&force, "force", false, "remove a deployed host at once, without deprovisioning it")
	return cmd
}

func hostOperationCommand(o *clientOptions) *cobra.Command {
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "operation UUID [--wait]",
		Short: "Show a host operation (what a --no-wait change printed); with --wait, follow it until it ends",
		Args:  cobra.ExactArgs(1),
		RunE: o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
			op, err := c.GetHostOperation(cmd.Context(), args[0])
			if err != nil || !w.wait {
				return o.printed(cmd, op, err)
			}
			return o.followOperation(cmd, c, op, w)
		}),
	}
	cmd.Flags().BoolVar(&w.wait, "wait", false, "follow the operation until it ends, then show the host it left")
	w.bindTimeout(cmd, "wait-timeout", "follow the operation until it ends")
	return cmd
}
