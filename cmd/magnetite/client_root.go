package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/client"
)

// clientOptions are the connection and output flags shared by the client
// subcommands (template, cluster, nodegroup, credential, quota, stats,
// service, host).
type clientOptions struct {
	endpoint string
	token    string
	cloud    string
	output   string
	// getenv reads OS_* settings; tests replace it.
	getenv func(string) string
}

// clientCommands are the subcommands that mirror `openstack coe`, and host
// for the bare-metal host inventory.
func clientCommands() []*cobra.Command {
	o := &clientOptions{getenv: os.Getenv}
	cmds := []*cobra.Command{
		templateCommand(o), clusterCommand(o), nodeGroupCommand(o), credentialCommand(o),
		quotaCommand(o), statsCommand(o), serviceCommand(o), hostCommand(o),
	}
	for _, c := range cmds {
		f := c.PersistentFlags()
		f.StringVar(&o.endpoint, "os-endpoint", "", "Magnum v1 endpoint (default $OS_ENDPOINT, else the Keystone catalog, else "+client.DefaultEndpoint+")")
		f.StringVar(&o.token, "os-token", "", "token sent as X-Auth-Token (default $OS_TOKEN); with --os-endpoint Keystone is not asked")
		f.StringVar(&o.cloud, "os-cloud", "", "clouds.yaml entry to authenticate with (default $OS_CLOUD)")
		f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	}
	return cmds
}

// connected is a command's RunE that connects first and hands do the
// client.
func (o *clientOptions) connected(do func(cmd *cobra.Command, c *client.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := o.connect(cmd)
		if err != nil {
			return err
		}
		return do(cmd, c, args)
	}
}

// prepared makes cmd a connected command whose body, read from the flags
// and arguments before anything is asked, run gets.
func prepared[B any](o *clientOptions, cmd *cobra.Command, body func(cmd *cobra.Command, args []string) (B, error), run func(cmd *cobra.Command, c *client.Client, args []string, body B) error) *cobra.Command {
	var in B
	cmd.PreRunE = func(cmd *cobra.Command, args []string) (err error) {
		in, err = body(cmd, args)
		return err
	}
	cmd.RunE = o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
		return run(cmd, c, args, in)
	})
	return cmd
}

// patched is the RunE of an update command: args[at] is the operation
// (add, replace or remove) and the rest its ATTRIBUTE=VALUE pairs, checked
// before anything is asked; do gets the patch and the identifiers before
// them.
func (o *clientOptions) patched(at int, do func(cmd *cobra.Command, c *client.Client, idents []string, patch []client.PatchOp) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		patch, err := patchFromArgs(args[at], args[at+1:])
		if err != nil {
			return err
		}
		return o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
			return do(cmd, c, args[:at], patch)
		})(cmd, args)
	}
}

// connect builds a client from the flags over the OS_* environment.
func (o *clientOptions) connect(cmd *cobra.Command) (*client.Client, error) {
	if err := o.checkOutput(); err != nil {
		return nil, err
	}
	s := client.SettingsFromEnv(o.getenv)
	if o.endpoint != "" {
		s.Endpoint = o.endpoint
	}
	if o.token != "" {
		s.Token = o.token
	}
	if o.cloud != "" {
		s.Cloud = o.cloud
	}
	return client.Connect(cmd.Context(), s)
}

func (o *clientOptions) checkOutput() error {
	switch o.output {
	case "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: choose table, json or yaml", o.output)
}

// printObject prints one object: a FIELD/VALUE table, or the object as the
// API returned it in JSON or YAML.
func (o *clientOptions) printObject(w io.Writer, v any) error {
	if o.output != "table" {
		return o.encode(w, v)
	}
	m, err := toMap(v)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tVALUE")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\n", k, cell(m[k]))
	}
	return tw.Flush()
}

// printed prints the object a call returned, or returns the call's error.
func (o *clientOptions) printed(cmd *cobra.Command, v any, err error) error {
	if err != nil {
		return err
	}
	return o.printObject(cmd.OutOrStdout(), v)
}

// printedList prints the objects a call returned, or returns its error.
func (o *clientOptions) printedList(cmd *cobra.Command, items any, err error, fields ...string) error {
	if err != nil {
		return err
	}
	return o.printList(cmd.OutOrStdout(), items, fields...)
}

// asked is what a command asks the service, given the client and the
// command's positional arguments.
type asked func(ctx context.Context, c *client.Client, args []string) (any, error)

// shown is a command that prints the one object get returns.
func (o *clientOptions) shown(use, short string, args cobra.PositionalArgs, get asked) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: args,
		RunE: o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
			v, err := get(cmd.Context(), c, args)
			return o.printed(cmd, v, err)
		}),
	}
}

// listed is a list command with the paging and sorting flags, filled into
// lo before list is asked (none when lo is nil: the listing has no pages);
// it prints the given fields of each object.
func (o *clientOptions) listed(use, short string, args cobra.PositionalArgs, lo *client.ListOptions, list asked, fields ...string) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Args: args,
		RunE: o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
			items, err := list(cmd.Context(), c, args)
			return o.printedList(cmd, items, err, fields...)
		}),
	}
	if lo != nil {
		listFlags(cmd, lo)
	}
	return cmd
}

// updated is an update command whose first idents arguments name the object
// and the rest are the patch; it prints the object update returns.
func (o *clientOptions) updated(use, short string, idents int, update func(ctx context.Context, c *client.Client, idents []string, patch []client.PatchOp) (any, error)) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.MinimumNArgs(idents + 2),
		RunE: o.patched(idents, func(cmd *cobra.Command, c *client.Client, idents []string, patch []client.PatchOp) error {
			v, err := update(cmd.Context(), c, idents, patch)
			return o.printed(cmd, v, err)
		}),
	}
}

// deleted is a delete command: the arguments from at on are the objects to
// delete, each reported with the done format (see deleteEach); del gets the
// arguments before them.
func (o *clientOptions) deleted(use, short string, at int, done string, del func(ctx context.Context, c *client.Client, parents []string, ident string) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.MinimumNArgs(at + 1),
		RunE: o.connected(func(cmd *cobra.Command, c *client.Client, args []string) error {
			return deleteEach(cmd, args[at:], done, func(ident string) error {
				return del(cmd.Context(), c, args[:at], ident)
			})
		}),
	}
}

// printList prints objects as a table of the given JSON fields, or the
// whole objects as a JSON or YAML list.
func (o *clientOptions) printList(w io.Writer, items any, fields ...string) error {
	if o.output != "table" {
		return o.encode(w, items)
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return err
	}
	var rows []map[string]any
	if err := json.Unmarshal(raw, &rows); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(fields, "\t")))
	for _, row := range rows {
		cells := make([]string, len(fields))
		for i, f := range fields {
			cells[i] = cell(row[f])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func (o *clientOptions) encode(w io.Writer, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if o.output == "yaml" {
		if raw, err = yaml.JSONToYAML(raw); err != nil {
			return err
		}
		_, err = w.Write(raw)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}

func toMap(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

// cell renders one value on one line: "-" for null, compact JSON for
// lists and maps.
func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return strings.ReplaceAll(x, "\n", " ")
	case []any, map[string]any:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x)
		return strings.TrimSpace(b.String())
	}
	return fmt.Sprint(v)
}

// parseLabels reads --labels values as magnumclient does: repeated
// KEY=VALUE flags, or one flag of KEY=VALUE pairs separated by , or ;. A
// key given twice keeps both values, comma-joined.
func parseLabels(flags []string) (map[string]string, error) {
	if len(flags) == 1 && strings.Count(flags[0], "=") > 1 {
		flags = strings.Split(strings.ReplaceAll(flags[0], ";", ","), ",")
	}
	out := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("labels must be KEY=VALUE, not %q", f)
		}
		if prev, dup := out[k]; dup {
			v = prev + "," + v
		}
		out[k] = v
	}
	return out, nil
}

// putLabels puts --labels values, when given, into a create body.
func putLabels(body map[string]any, labels []string) error {
	if len(labels) > 0 {
		l, err := parseLabels(labels)
		if err != nil {
			return err
		}
		body["labels"] = l
	}
	return nil
}

// patchFromArgs turns `OP ATTRIBUTE=VALUE ...` (openstack coe's update
// syntax) into a JSON patch. Values that parse as JSON (numbers, booleans,
// objects) are sent as such; labels take KEY=VALUE,... lists.
func patchFromArgs(op string, attrs []string) ([]client.PatchOp, error) {
	switch op {
	case "add", "replace", "remove":
	default:
		return nil, fmt.Errorf("operation %q: choose add, replace or remove", op)
	}
	if len(attrs) == 0 {
		return nil, fmt.Errorf("name at least one attribute (e.g. node_count=3)")
	}
	var patch []client.PatchOp
	for _, a := range attrs {
		if op == "remove" {
			patch = append(patch, client.PatchOp{Op: op, Path: "/" + strings.TrimPrefix(a, "/")})
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("attribute %q: write ATTRIBUTE=VALUE", a)
		}
		k = strings.TrimPrefix(k, "/")
		var value any = v
		if k == "labels" {
			l, err := parseLabels([]string{v})
			if err != nil {
				return nil, err
			}
			value = l
		} else {
			var parsed any
			if json.Unmarshal([]byte(v), &parsed) == nil {
				value = parsed
			}
		}
		patch = append(patch, client.PatchOp{Op: op, Path: "/" + k, Value: value})
	}
	return patch, nil
}

// toggle adds the flags --on and --off, which set field in a request body
// to true or false; with neither the service's default applies.
func toggle(cmd *cobra.Command, on, off, field, onHelp, offHelp string) func(body map[string]any) error {
	cmd.Flags().Bool(on, false, onHelp)
	cmd.Flags().Bool(off, false, offHelp)
	return func(body map[string]any) error {
		if cmd.Flags().Changed(on) && cmd.Flags().Changed(off) {
			return fmt.Errorf("--%s and --%s exclude each other", on, off)
		}
		setIf(cmd, body, on, field, true)
		setIf(cmd, body, off, field, false)
		return nil
	}
}

// floatingIPFlags are --floating-ip-enabled and --floating-ip-disabled.
func floatingIPFlags(cmd *cobra.Command) func(body map[string]any) error {
	return toggle(cmd, "floating-ip-enabled", "floating-ip-disabled", "floating_ip_enabled", "give nodes floating IPs", "give nodes no floating IPs")
}

// setIf puts a flag's value into a request body only when the user set it,
// so the server's defaults apply to the rest.
func setIf[T any](cmd *cobra.Command, body map[string]any, flag, field string, v T) {
	if cmd.Flags().Changed(flag) {
		body[field] = v
	}
}
