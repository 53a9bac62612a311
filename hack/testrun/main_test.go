package main

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// events is go test -json output as test2json writes it.
func events(t *testing.T, evs ...event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestParseReportsFailuresOwnCAPDTestsAndTimes(t *testing.T) {
	const a, b, c = "example/a", "example/b", "example/c"
	in := events(t,
		event{Action: "output", Package: a, Test: "TestGood", Output: "=== RUN   TestGood\n"},
		event{Action: "pass", Package: a, Test: "TestGood/part", Elapsed: 4},
		event{Action: "pass", Package: a, Test: "TestGood", Elapsed: 7},
		event{Action: "output", Package: a, Test: "TestBad", Output: "    bad_test.go:9: the cluster never came up\n"},
		event{Action: "fail", Package: a, Test: "TestBad", Elapsed: 2},
		event{Action: "output", Package: a, Test: "TestLocal/start", Output: "    " + testenv.OwnCAPDSkip + "\n"},
		event{Action: "skip", Package: a, Test: "TestLocal/start"},
		event{Action: "skip", Package: a, Test: "TestLocal"},
		event{Action: "output", Package: a, Test: "TestShort", Output: "    -short: runs in the full suite\n"},
		event{Action: "skip", Package: a, Test: "TestShort"},
		event{Action: "fail", Package: a, Elapsed: 12.5},
		event{Action: "pass", Package: b, Elapsed: 3},
		event{Action: "build-output", ImportPath: c + " [" + c + ".test]", Output: "c.go:1: syntax error\n"},
		event{Action: "build-fail", ImportPath: c + " [" + c + ".test]"},
		event{Action: "output", Package: c, Output: "FAIL\t" + c + " [build failed]\n"},
		event{Action: "fail", Package: c},
	)
	var out strings.Builder
	var found []string
	res := parse(strings.NewReader(in), &out, func(pkg, test string) { found = append(found, pkg+" "+test) })

	if want := []string{a + " TestBad", c + " [" + c + ".test] (build)"}; !slices.Equal(res.failed, want) {
		t.Errorf("failed = %q, want %q", res.failed, want)
	}
	if got := res.ownCAPD[a]; !slices.Equal(got, []string{"TestLocal"}) {
		t.Errorf("tests to run on a CAPD of their own = %q, want the top-level TestLocal once", got)
	}
	if want := []string{a + " TestLocal"}; !slices.Equal(found, want) {
		t.Errorf("parse called ownCAPD with %q, want %q as its skip came", found, want)
	}
	if res.elapsed[a] != 12.5 || res.elapsed[b] != 3 {
		t.Errorf("elapsed = %v", res.elapsed)
	}
	if want := map[string]float64{a + " TestGood": 7, a + " TestBad": 2}; !maps.Equal(res.tests, want) {
		t.Errorf("top-level test times = %v, want %v (subtests left out)", res.tests, want)
	}
	for _, want := range []string{"the cluster never came up", "ok  \t" + b, "c.go:1: syntax error", "[build failed]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the account lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "=== RUN   TestGood") || strings.Contains(out.String(), "-short: runs") {
		t.Errorf("the account shows passing or skipped tests' output:\n%s", out.String())
	}
}

func TestBinariesRunAsGoTestRunsThem(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: links a test binary; runs in the full suite")
	}
	const pkg = "github.com/magnetite-io/magnetite/hack/testrun/testdata/sample"
	bins, failed, err := linkTests(t.TempDir(), []string{"./testdata/sample"})
	if err != nil || len(failed) > 0 {
		t.Fatalf("linkTests: %v, failed %q", err, failed)
	}
	if _, ok := bins[pkg]; !ok {
		t.Fatalf("no binary for %s in %v", pkg, bins)
	}
	t2j, err := test2json()
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{parallel: 1, packages: 2, timeout: time.Minute, binaries: bins, test2json: t2j}
	var account strings.Builder
	res := r.goTestTo(goTestRun{env: os.Environ(), pkgs: []string{pkg, "example/no-tests"}}, &account)
	if want := []string{pkg + " TestFails"}; !slices.Equal(res.failed, want) {
		t.Errorf("failed = %q, want %q\n%s", res.failed, want, account.String())
	}
	for _, test := range []string{"TestPasses", "TestRunsInItsPackageDirectory"} {
		if _, ok := res.tests[pkg+" "+test]; !ok {
			t.Errorf("no time for %s: it did not pass\n%s", test, account.String())
		}
	}
	if _, ok := res.elapsed[pkg]; !ok || !strings.Contains(account.String(), "sample failure") {
		t.Errorf("the package's end or its failing test's output is missing:\n%s", account.String())
	}

	only := r.goTestTo(goTestRun{env: os.Environ(), pkgs: []string{pkg}, extra: runOnly([]string{"TestPasses"})}, &account)
	if len(only.failed) > 0 || len(only.tests) != 1 {
		t.Errorf("runOnly(TestPasses) ran %v, failed %q", only.tests, only.failed)
	}
}

func TestLinkGroupsKeepBinaryNamesApart(t *testing.T) {
	pkgs := []listedPackage{
		{importPath: "m/internal/metal3", tests: true},
		{importPath: "m/internal/labels", tests: true},
		{importPath: "m/internal/none"},
		{importPath: "m/test/metal3", tests: true},
		{importPath: "m/x/metal3", tests: true},
		{importPath: "m/test/labels", tests: true},
	}
	var got [][]string
	for _, g := range linkGroups(pkgs) {
		var names []string
		for _, p := range g {
			names = append(names, p.importPath)
		}
		got = append(got, names)
	}
	want := [][]string{
		{"m/internal/metal3", "m/internal/labels"},
		{"m/test/metal3", "m/test/labels"},
		{"m/x/metal3"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("linkGroups = %q, want %q (a package without tests in none)", got, want)
	}
}
