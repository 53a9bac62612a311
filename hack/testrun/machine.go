package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The suite's speed is bound either by the cores or by how many packages
// run at once (-p), and -p is bound by memory. watchMachine samples both
// while the packages run, so a run says which bound it met: how busy the
// cores were over the whole phase and the least memory left.

// machineStats is what the sampler saw.
type machineStats struct {
	busy, total     uint64 // CPU jiffies over the phase, all cores
	leastAvailable  uint64 // KiB, MemAvailable at its lowest
	memTotal        uint64 // KiB
	cores           int
	sampled, failed bool
}

// cpuJiffies reads /proc/stat's first line: busy (everything but idle and
// iowait) and total jiffies since boot, and the number of cores.
func cpuJiffies(r io.Reader) (busy, total uint64, cores int, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "cpu":
			for i, v := range f[1:] {
				n, perr := strconv.ParseUint(v, 10, 64)
				if perr != nil {
					return 0, 0, 0, perr
				}
				total += n
				if i != 3 && i != 4 { // idle, iowait
					busy += n
				}
			}
		case strings.HasPrefix(f[0], "cpu"):
			cores++
		}
	}
	if total == 0 {
		return 0, 0, 0, fmt.Errorf("no cpu line")
	}
	return busy, total, cores, sc.Err()
}

// memInfo reads MemTotal and MemAvailable (KiB) from /proc/meminfo.
func memInfo(r io.Reader) (total, available uint64, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		n, perr := strconv.ParseUint(f[1], 10, 64)
		if perr != nil {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			total = n
		case "MemAvailable:":
			available = n
		}
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("no MemTotal")
	}
	return total, available, sc.Err()
}

func readProc(path string, parse func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return parse(f)
}

// watchMachine samples the machine every interval until stop is called,
// which returns what it saw.
func watchMachine(interval time.Duration) (stop func() machineStats) {
	var (
		mu    sync.Mutex
		st    machineStats
		b0    uint64
		t0    uint64
		quit  = make(chan struct{})
		ended = make(chan struct{})
	)
	sampleMem := func() {
		var total, avail uint64
		if readProc("/proc/meminfo", func(r io.Reader) (err error) { total, avail, err = memInfo(r); return }) != nil {
			st.failed = true
			return
		}
		st.memTotal = total
		if !st.sampled || avail < st.leastAvailable {
			st.leastAvailable = avail
		}
		st.sampled = true
	}
	if readProc("/proc/stat", func(r io.Reader) (err error) { b0, t0, st.cores, err = cpuJiffies(r); return }) != nil {
		st.failed = true
	}
	sampleMem()
	go func() {
		defer close(ended)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				mu.Lock()
				sampleMem()
				mu.Unlock()
			}
		}
	}()
	return func() machineStats {
		close(quit)
		<-ended
		mu.Lock()
		defer mu.Unlock()
		var b1, t1 uint64
		if readProc("/proc/stat", func(r io.Reader) (err error) { b1, t1, _, err = cpuJiffies(r); return }) != nil || t1 <= t0 {
			st.failed = true
			return st
		}
		st.busy, st.total = b1-b0, t1-t0
		return st
	}
}

// String is the line testrun prints.
func (s machineStats) String() string {
	if s.failed || s.total == 0 {
		return "== the machine during go test: not measured (no /proc)"
	}
	return fmt.Sprintf("== the machine during go test: its %d cores %.0f%% busy, %.1f of %.1f GiB memory left at the least",
		s.cores, 100*float64(s.busy)/float64(s.total), float64(s.leastAvailable)/(1<<20), float64(s.memTotal)/(1<<20))
}
