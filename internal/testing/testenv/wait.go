package testenv

import (
	"testing"
	"time"
)

// WaitFor is the one way tests wait for something they cannot be told
// about (another process's state, a screen, a log): it asks cond until it
// holds, every 50ms at first and backing off to once a second, and fails
// the test after limit with what and the last state cond reported. A
// condition, never a fixed sleep.
func WaitFor(t testing.TB, what string, limit time.Duration, cond func() (ok bool, state string)) {
	t.Helper()
	WaitEvery(t, what, limit, time.Second, cond)
}

// WaitEvery is WaitFor backing off to at most every, for states that pass
// quickly (a progress line on a terminal) where a second between looks
// could miss one.
func WaitEvery(t testing.TB, what string, limit, every time.Duration, cond func() (ok bool, state string)) {
	t.Helper()
	if ok, state := Poll(limit, every, cond); !ok {
		t.Fatalf("waited %s for %s; last state: %s", limit, what, state)
	}
}

// Poll is WaitEvery for a caller that fails in its own way (saving the
// page a browser shows, say): it reports whether cond held within limit
// and the last state cond reported.
func Poll(limit, every time.Duration, cond func() (ok bool, state string)) (bool, string) {
	deadline := time.Now().Add(limit)
	interval := min(50*time.Millisecond, every)
	for {
		ok, state := cond()
		if ok || time.Now().After(deadline) {
			return ok, state
		}
		time.Sleep(interval)
		interval = min(2*interval, every)
	}
}
