package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// The suite shares two cores: how long a package takes says little about
// what it costs the others, its CPU time does. testrun runs every test
// binary through itself (runBinary), which runs the binary,
// waits for it and appends what it and every process it waited for
// (kube-apiservers, etcds, Keystones, the clients) spent on the CPU to
// the file $MAGNETITE_TEST_CPU_LOG names: a line per binary, its package's
// directory (a test binary runs in its package's directory),
// user seconds and system seconds.

// execCPUFlag, as testrun's first argument, makes it the wrapper.
const execCPUFlag = "--exec-cpu"

// cpuLogEnv names the file the wrapper appends to.
const cpuLogEnv = "MAGNETITE_TEST_CPU_LOG"

// execCPU runs args as the test binary and records its CPU time; it
// returns the binary's exit code.
func execCPU(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Should testrun kill the wrapper, the binary goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	if ps := cmd.ProcessState; ps != nil {
		if path := os.Getenv(cpuLogEnv); path != "" {
			dir, _ := os.Getwd()
			line := fmt.Sprintf("%s\t%.1f\t%.1f\n", dir, ps.UserTime().Seconds(), ps.SystemTime().Seconds())
			if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
				_, _ = f.WriteString(line)
				f.Close()
			}
		}
		if code := ps.ExitCode(); code >= 0 {
			return code
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

// packageCPU is one package's CPU seconds over all its binaries' runs.
type packageCPU struct {
	pkg       string
	user, sys float64
}

// readCPU sums the wrapper's lines per package, naming each package by its
// directory relative to root, most CPU first.
func readCPU(path, root string) ([]packageCPU, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]*packageCPU{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 {
			continue
		}
		user, err1 := strconv.ParseFloat(fields[1], 64)
		sys, err2 := strconv.ParseFloat(fields[2], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		pkg := fields[0]
		if rel, err := filepath.Rel(root, pkg); err == nil && !strings.HasPrefix(rel, "..") {
			pkg = rel
		}
		if sums[pkg] == nil {
			sums[pkg] = &packageCPU{pkg: pkg}
		}
		sums[pkg].user += user
		sums[pkg].sys += sys
	}
	out := make([]packageCPU, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].user+out[i].sys > out[j].user+out[j].sys })
	return out, sc.Err()
}
