package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

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
