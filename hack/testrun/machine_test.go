package main

import (
	"strings"
	"testing"
	"time"
)

func TestCPUJiffiesCountsBusyTimeAndCores(t *testing.T) {
	stat := "cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\ncpu1 50 3 25 400 20 2 1 0 0 0\nintr 1 2 3\n"
	busy, total, cores, err := cpuJiffies(strings.NewReader(stat))
	if err != nil {
		t.Fatal(err)
	}
	// busy: user, nice, system, irq, softirq, steal (not idle, iowait).
	if busy != 160 || total != 1000 || cores != 2 {
		t.Errorf("busy %d, total %d, cores %d; want 160, 1000, 2", busy, total, cores)
	}
	if _, _, _, err := cpuJiffies(strings.NewReader("intr 1\n")); err == nil {
		t.Error("no cpu line read without an error")
	}
}

func TestMemInfoReadsTotalAndAvailable(t *testing.T) {
	total, avail, err := memInfo(strings.NewReader("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   6832000 kB\n"))
	if err != nil || total != 24576000 || avail != 6832000 {
		t.Errorf("total %d, available %d, %v", total, avail, err)
	}
}

func TestWatchMachineMeasuresThisMachine(t *testing.T) {
	stop := watchMachine(10 * time.Millisecond)
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) { // keep a core busy
	}
	st := stop()
	if st.failed || st.total == 0 || st.busy == 0 || st.cores == 0 || st.memTotal == 0 || st.leastAvailable == 0 || st.leastAvailable > st.memTotal {
		t.Fatalf("stats %+v", st)
	}
	if s := st.String(); !strings.Contains(s, "cores") || !strings.Contains(s, "GiB memory left") {
		t.Errorf("line %q", s)
	}
}
