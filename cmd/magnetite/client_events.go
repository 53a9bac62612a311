package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/client"
)

func clusterEventsCommand(o *clientOptions) *cobra.Command {
	var follow bool
	var since string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "events CLUSTER",
		Short: "Print a cluster's history: status transitions, Cluster API condition changes, requests",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := client.EventQuery{}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				q.Since = t.UTC().Format(time.RFC3339Nano)
			}
			c, err := o.connect(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			events, err := c.ListEvents(ctx, args[0], q)
			if err != nil {
				return err
			}
			if !follow {
				if o.output != "table" {
					return o.encode(cmd.OutOrStdout(), events)
				}
				return printEvents(cmd.OutOrStdout(), events, true)
			}
			// Following: name the cluster by UUID so a new cluster reusing
			// the name is not followed by mistake.
			cl, err := c.GetCluster(ctx, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := o.streamEvents(out, events, true); err != nil {
				return err
			}
			for {
				if n := len(events); n > 0 {
					q.Marker = events[n-1].ID
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
				events, err = c.ListEvents(ctx, cl.UUID, q)
				if client.IsNotFound(err) {
					fmt.Fprintf(cmd.ErrOrStderr(), "Cluster %s is gone.\n", cl.Name)
					return nil
				}
				if err != nil {
					return err
				}
				if err := o.streamEvents(out, events, false); err != nil {
					return err
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events until the cluster is gone or the command is interrupted")
	cmd.Flags().StringVar(&since, "since", "", "only events at or after this time: RFC 3339 (2024-05-01T12:00:00Z) or a duration ago (30m)")
	cmd.Flags().DurationVar(&interval, "poll-interval", 2*time.Second, "how often to ask the API when following")
	_ = cmd.Flags().MarkHidden("poll-interval")
	return cmd
}

// parseSince reads an RFC 3339 time or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: give an RFC 3339 time (2024-05-01T12:00:00Z) or a duration (30m)", s)
}

// streamEvents prints events as they arrive: table rows (a header first),
// one JSON object per line, or YAML documents.
func (o *clientOptions) streamEvents(w io.Writer, events []apitypes.ClusterEvent, first bool) error {
	switch o.output {
	case "table":
		if len(events) == 0 && !first {
			return nil
		}
		return printEvents(w, events, first)
	case "json":
		for _, ev := range events {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", b)
		}
	default:
		for _, ev := range events {
			b, err := yaml.Marshal(ev)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "---\n%s", b)
		}
	}
	return nil
}

func printEvents(w io.Writer, events []apitypes.ClusterEvent, header bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "TIME\tKIND\tSTATUS\tREASON\tMESSAGE")
	}
	for _, ev := range events {
		t := ev.Time
		if parsed, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil {
			t = parsed.UTC().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t, ev.Kind, ev.Status, cell(nonEmpty(ev.Reason)), cell(ev.Message))
	}
	return tw.Flush()
}

func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
