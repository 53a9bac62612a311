package doctor

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Status is a check's verdict.
type Status string

const (
	Pass Status = "PASS"
	Warn Status = "WARN"
	Fail Status = "FAIL"
	// Skip: the check does not apply to this configuration.
	Skip Status = "SKIP"
)

// Result is one check's outcome.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix is the one-line remedy, set when Status is Warn or Fail.
	Fix string `json:"fix,omitempty"`
}

func pass(check, format string, args ...any) Result {
	return Result{Check: check, Status: Pass, Detail: fmt.Sprintf(format, args...)}
}

func skip(check, format string, args ...any) Result {
	return Result{Check: check, Status: Skip, Detail: fmt.Sprintf(format, args...)}
}

func warn(check, fix, format string, args ...any) Result {
	return Result{Check: check, Status: Warn, Detail: fmt.Sprintf(format, args...), Fix: fix}
}

func fail(check, fix, format string, args ...any) Result {
	return Result{Check: check, Status: Fail, Detail: fmt.Sprintf(format, args...), Fix: fix}
}

// Failed reports whether any result is a FAIL.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Fail {
			return true
		}
	}
	return false
}

// Print writes the results as an aligned table, each fix on the line below
// its check, and a closing count.
func Print(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	counts := map[Status]int{}
	for _, r := range rs {
		counts[r.Status]++
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Status, r.Check, oneLine(r.Detail))
		if r.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", oneLine(r.Fix))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\ndoctor: %d PASS, %d WARN, %d FAIL, %d SKIP\n", counts[Pass], counts[Warn], counts[Fail], counts[Skip])
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
