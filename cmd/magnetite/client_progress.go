package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/client"
)

// watchGoal says when a wait is over.
type watchGoal int

const (
	// untilSettled waits for a status that is not *_IN_PROGRESS.
	untilSettled watchGoal = iota
	// untilGone waits for the cluster to disappear (404).
	untilGone
)

// groupProgress is how far one node group (or the control plane) is.
type groupProgress struct {
	label   string
	ready   int // -1: not reported yet
	desired int
	problem string
}

// progress is what the user sees of a cluster while waiting.
type progress struct {
	name    string
	status  string
	health  string
	reason  string
	groups  []groupProgress
	elapsed time.Duration
	gone    bool
}

// readyCount finds "x/y ready" in the conductor's health reasons.
var readyCount = regexp.MustCompile(`(\d+)/(\d+) (?:nodes )?ready`)

// progressOf reads a cluster and its node groups. Ready counts come from
// health_status_reason, where the conductor writes "control_plane" as
// "<condition> (x/y ready)" and "nodegroup NAME" as "x/y ready[: problem]";
// a group the conductor has not reported on yet shows ?/node_count.
func progressOf(cl *apitypes.Cluster, ngs []apitypes.NodeGroupSummary) progress {
	p := progress{name: cl.Name, status: cl.Status}
	if cl.HealthStatus != nil {
		p.health = *cl.HealthStatus
	}
	if cl.StatusReason != nil {
		p.reason = *cl.StatusReason
	}
	hsr := cl.HealthStatusReason
	sort.SliceStable(ngs, func(i, j int) bool { return ngs[i].Role == "master" && ngs[j].Role != "master" })
	for _, ng := range ngs {
		g := groupProgress{label: "node group " + ng.Name, ready: -1, desired: ng.NodeCount}
		reported, ok := hsr["nodegroup "+ng.Name]
		if ng.Role == "master" {
			g.label = "control plane"
			reported, ok = hsr["control_plane"]
		}
		if ok {
			if m := readyCount.FindStringSubmatch(reported); m != nil {
				g.ready, _ = strconv.Atoi(m[1])
				g.desired, _ = strconv.Atoi(m[2])
			}
			if ng.Role != "master" {
				if _, problem, found := strings.Cut(reported, ": "); found {
					g.problem = problem
				}
			}
		}
		p.groups = append(p.groups, g)
	}
	return p
}

func (g groupProgress) count() string {
	if g.ready < 0 {
		return fmt.Sprintf("?/%d", g.desired)
	}
	return fmt.Sprintf("%d/%d ready", g.ready, g.desired)
}

// lines is the progress block drawn on a terminal.
func (p progress) lines() []string {
	head := fmt.Sprintf("Cluster %s: %s", p.name, p.status)
	if p.gone {
		head = fmt.Sprintf("Cluster %s: deleted", p.name)
	}
	if p.health != "" && !p.gone {
		head += " (health " + p.health + ")"
	}
	head += "   elapsed " + formatElapsed(p.elapsed)
	out := []string{head}
	width := 0
	for _, g := range p.groups {
		width = max(width, utf8.RuneCountInString(g.label))
	}
	for _, g := range p.groups {
		line := fmt.Sprintf("  %-*s  %s", width, g.label, g.count())
		if g.problem != "" {
			line += ": " + g.problem
		}
		out = append(out, line)
	}
	if p.reason != "" {
		out = append(out, "  "+p.reason)
	}
	return out
}

// line is the one-line form printed when output is not a terminal.
func (p progress) line() string {
	if p.gone {
		return fmt.Sprintf("[%s] deleted", formatElapsed(p.elapsed))
	}
	parts := []string{p.status}
	for _, g := range p.groups {
		parts = append(parts, strings.TrimPrefix(g.label, "node group ")+" "+g.count())
	}
	s := fmt.Sprintf("[%s] %s", formatElapsed(p.elapsed), strings.Join(parts, ", "))
	if p.reason != "" {
		s += " | " + p.reason
	}
	return s
}

// key is the progress without the clock: a new plain line is printed only
// when it changes.
func (p progress) key() string {
	p.elapsed = 0
	return p.line()
}

func formatElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh%02dm%02ds", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// drawer shows progress: redrawn in place on a terminal, a line per change
// elsewhere.
type drawer struct {
	w       io.Writer
	tty     bool
	width   int
	drawn   int
	lastKey string
}

func (d *drawer) draw(p progress) {
	if !d.tty {
		if k := p.key(); k != d.lastKey {
			d.lastKey = k
			fmt.Fprintln(d.w, p.line())
		}
		return
	}
	var b strings.Builder
	if d.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", d.drawn)
	}
	lines := p.lines()
	for _, l := range lines {
		b.WriteString("\r\x1b[2K")
		b.WriteString(truncate(l, d.width-1))
		b.WriteString("\n")
	}
	// Clear what a longer previous drawing left below.
	for i := len(lines); i < d.drawn; i++ {
		b.WriteString("\r\x1b[2K\n")
	}
	if extra := d.drawn - len(lines); extra > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", extra)
	}
	d.drawn = len(lines)
	io.WriteString(d.w, b.String())
}

func truncate(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// operationStart is when the cluster's current operation began, by the
// API's clock: created_at while creating, updated_at otherwise.
func operationStart(cl *apitypes.Cluster) (time.Time, bool) {
	ts := cl.CreatedAt
	if !strings.HasPrefix(cl.Status, "CREATE_") && cl.UpdatedAt != nil {
		ts = *cl.UpdatedAt
	}
	t, err := time.Parse(time.RFC3339, ts)
	return t, err == nil
}

// opClock measures how long the operation being watched has run. Its start
// is read once, at the first sight of the cluster in progress: updated_at
// moves with every status the conductor writes, so read again it would
// restart the clock (an update that took 22 s reported 1 s).
type opClock struct {
	began, start time.Time
}

func (c *opClock) elapsed(cl *apitypes.Cluster, now time.Time) time.Duration {
	if c.start.IsZero() {
		c.start = c.began
		if t, ok := operationStart(cl); ok && strings.HasSuffix(cl.Status, "_IN_PROGRESS") && !t.After(now) {
			c.start = t
		}
	}
	return now.Sub(c.start)
}

// watch polls a cluster until the goal is met, drawing its progress. The
// drawing goes to stdout, or to stderr when stdout carries JSON or YAML (the
// settled cluster is printed there at the end). A cluster that ends
// *_FAILED is an error carrying the reason.
func (o *clientOptions) watch(cmd *cobra.Command, c *client.Client, ident string, w waitFlags, goal watchGoal) error {
	ctx := cmd.Context()
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	out := cmd.OutOrStdout()
	if o.output != "table" {
		out = cmd.ErrOrStderr()
	}
	d := &drawer{w: out}
	if f, ok := out.(*os.File); ok {
		d.tty, d.width = terminalWidth(f)
	}
	interval := w.interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	clock := opClock{began: time.Now()}
	began := clock.began
	var last progress
	var cl *apitypes.Cluster
	for {
		var err error
		cl, err = c.GetCluster(ctx, ident)
		switch {
		case err == nil:
			ngs, nerr := c.ListNodeGroups(ctx, cl.UUID, client.ListOptions{})
			if nerr != nil && !client.IsNotFound(nerr) {
				return o.waitError(ctx, nerr, ident, w, last)
			}
			last = progressOf(cl, ngs)
			last.elapsed = clock.elapsed(cl, time.Now())
		case client.IsNotFound(err) && (goal == untilGone || last.status == "DELETE_IN_PROGRESS"):
			// Gone: what a delete waits for, and how a watched deletion ends.
			if last.name == "" {
				last.name = ident
			}
			last.gone, last.elapsed = true, time.Since(began)
			d.draw(last)
			fmt.Fprintf(out, "Cluster %s deleted after %s.\n", last.name, formatElapsed(last.elapsed))
			return nil
		default:
			return o.waitError(ctx, err, ident, w, last)
		}
		d.draw(last)
		if !strings.HasSuffix(cl.Status, "_IN_PROGRESS") && (goal == untilSettled || strings.HasSuffix(cl.Status, "_FAILED")) {
			break
		}
		select {
		case <-ctx.Done():
			return o.waitError(ctx, ctx.Err(), ident, w, last)
		case <-time.After(interval):
		}
	}
	if strings.HasSuffix(cl.Status, "_FAILED") {
		reason := "no reason given"
		if cl.StatusReason != nil && *cl.StatusReason != "" {
			reason = *cl.StatusReason
		}
		return fmt.Errorf("cluster %s is %s: %s", cl.Name, cl.Status, reason)
	}
	fmt.Fprintf(out, "Cluster %s is %s after %s.\n", cl.Name, cl.Status, formatElapsed(last.elapsed))
	if o.output != "table" {
		return o.printObject(cmd.OutOrStdout(), cl)
	}
	return nil
}

func (o *clientOptions) waitError(ctx context.Context, err error, ident string, w waitFlags, last progress) error {
	if errors.Is(err, context.DeadlineExceeded) || (ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)) {
		state := "no answer yet"
		if last.status != "" {
			state = "still " + last.status
			if last.reason != "" {
				state += ": " + last.reason
			}
		}
		return fmt.Errorf("gave up waiting for cluster %s after %s (%s)", ident, w.timeout, state)
	}
	return err
}
