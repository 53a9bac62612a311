package main

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// The suite is bound by two cores and by its longest package: testrun
// starts packages' binaries in the order they are named, -p at once, so a
// long package named last (test/cli, alphabetically late) runs on alone
// after the others have finished and leaves a core idle. testrun names the packages that
// took longest in a measured run first (longest processing time first),
// then every other package in go list's order.
//
// slowest.txt holds those packages, longest first, as `--save-order`
// wrote them from a whole run's package times: rewrite it after a change
// that moves a package's time much.
//
//go:embed slowest.txt
var slowestList string

// slowest are the import paths in slowest.txt, longest first.
func slowest() []string {
	var out []string
	for _, line := range strings.Split(slowestList, "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			out = append(out, f[0])
		}
	}
	return out
}

// ordered lists the packages patterns name (go list's order), those in
// slow first in slow's order. If go list fails the patterns are kept as
// given: go test reports the same problem.
func ordered(patterns, slow []string) []string {
	out, err := exec.Command("go", append([]string{"list", "-e", "-f", "{{.ImportPath}}"}, patterns...)...).Output()
	if err != nil {
		return patterns
	}
	return rank(strings.Fields(string(out)), slow)
}

// rank orders pkgs: those in slow first, in slow's order, then the rest as
// they came.
func rank(pkgs, slow []string) []string {
	out := slices.Clone(pkgs)
	pos := func(p string) int {
		if i := slices.Index(slow, p); i >= 0 {
			return i
		}
		return len(slow)
	}
	slices.SortStableFunc(out, func(a, b string) int { return pos(a) - pos(b) })
	return out
}

// saveOrder writes the run's packages that took a minute or more, longest
// first, to path in slowest.txt's format.
func (r *runner) saveOrder(path string) error {
	var b strings.Builder
	b.WriteString("# Packages testrun starts first, longest first (seconds in the run that\n# wrote this: go run ./hack/testrun --save-order hack/testrun/slowest.txt).\n")
	pkgs := slices.Clone(r.order)
	slices.SortStableFunc(pkgs, func(a, c string) int {
		return int(slices.Max(r.times[c])*10) - int(slices.Max(r.times[a])*10)
	})
	for _, pkg := range pkgs {
		s := slices.Max(r.times[pkg])
		if s < 60 || strings.Contains(pkg, " ") { // " (own CAPD)" phases are run apart
			continue
		}
		fmt.Fprintf(&b, "%s\t%.0f\n", pkg, s)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
