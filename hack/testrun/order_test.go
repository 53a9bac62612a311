package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRankStartsTheSlowestPackagesFirst(t *testing.T) {
	pkgs := []string{"m/a", "m/b", "m/cli", "m/d", "m/keystone"}
	got := rank(pkgs, []string{"m/cli", "m/gone", "m/keystone"})
	if want := []string{"m/cli", "m/keystone", "m/a", "m/b", "m/d"}; !slices.Equal(got, want) {
		t.Errorf("rank = %q, want %q", got, want)
	}
	if !slices.Equal(pkgs, []string{"m/a", "m/b", "m/cli", "m/d", "m/keystone"}) {
		t.Errorf("rank changed its argument: %q", pkgs)
	}
}

func TestTheCommittedOrderNamesThisModulesPackages(t *testing.T) {
	slow := slowest()
	if len(slow) < 5 {
		t.Fatalf("slowest.txt names %d packages: %q", len(slow), slow)
	}
	listed := ordered([]string{"github.com/magnetite-io/magnetite/..."}, nil)
	for _, p := range slow {
		if !slices.Contains(listed, p) {
			t.Errorf("slowest.txt names %s, which go list does not: rewrite it with --save-order", p)
		}
	}
	if got := ordered([]string{"github.com/magnetite-io/magnetite/..."}, slow); !slices.Equal(got[:len(slow)], slow) {
		t.Errorf("ordered starts with %q, want slowest.txt's %q", got[:len(slow)], slow)
	}
}

func TestParseRecordsWhenEachPackageRan(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	in := events(t,
		event{Action: "start", Package: "m/a", Time: t0},
		event{Action: "start", Package: "m/b", Time: t0.Add(time.Second)},
		event{Action: "pass", Package: "m/b", Elapsed: 1, Time: t0.Add(2 * time.Second)},
		event{Action: "pass", Package: "m/a", Elapsed: 90, Time: t0.Add(90 * time.Second)},
	)
	res := parse(strings.NewReader(in), &strings.Builder{}, nil)
	if sp := res.spans["m/a"]; !sp[0].Equal(t0) || !sp[1].Equal(t0.Add(90*time.Second)) {
		t.Errorf("m/a ran %v", sp)
	}
	r := &runner{}
	r.record(res)
	var out strings.Builder
	r.printTimeline(&out)
	if !strings.Contains(out.String(), "m/a") || strings.Contains(out.String(), "m/b") {
		t.Errorf("timeline shows packages of a minute or more only:\n%s", out.String())
	}
}
