package store

import (
	"testing"
	"time"
)

// TestDeadlockPauseGrowsWithJitterAndStaysBounded: racing writers wait
// longer after each lost deadlock, never the same time as each other, and
// never more than the cap.
func TestDeadlockPauseGrowsWithJitterAndStaysBounded(t *testing.T) {
	prevHigh := time.Duration(0)
	for attempt := 1; attempt <= 12; attempt++ {
		lo, hi := time.Duration(1<<63-1), time.Duration(0)
		seen := map[time.Duration]bool{}
		for range 200 {
			d := deadlockPause(attempt)
			lo, hi = min(lo, d), max(hi, d)
			seen[d] = true
		}
		if hi > 250*time.Millisecond || lo <= 0 {
			t.Fatalf("attempt %d: pauses in [%v, %v], want within (0, 250ms]", attempt, lo, hi)
		}
		if len(seen) < 20 {
			t.Errorf("attempt %d: only %d distinct pauses in 200 draws; jitter is missing", attempt, len(seen))
		}
		if hi < prevHigh/2 {
			t.Errorf("attempt %d: longest pause %v shrank below half of the previous attempt's %v", attempt, hi, prevHigh)
		}
		prevHigh = hi
	}
	if d := deadlockPause(12); d < 125*time.Millisecond {
		t.Errorf("a long-losing writer waits %v, want at least half the 250ms cap", d)
	}
}
