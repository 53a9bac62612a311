package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExecCPURecordsTheBinaryAndWhatItWaitedFor: the wrapper passes the
// test binary's exit code on and records, under the directory it ran in,
// the CPU its process tree spent, the processes it started and waited for
// included (as a test binary's kube-apiservers are).
func TestExecCPURecordsTheBinaryAndWhatItWaitedFor(t *testing.T) {
	log := filepath.Join(t.TempDir(), "cpu.log")
	t.Setenv(cpuLogEnv, log)
	pkg := t.TempDir()
	t.Chdir(pkg)
	// The loop runs in a subshell: a process the binary waits for.
	busy := `(i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done); exit 3`
	if code := execCPU([]string{"/bin/sh", "-c", busy}); code != 3 {
		t.Errorf("exit code %d, want the binary's 3", code)
	}
	if code := execCPU([]string{"/bin/sh", "-c", "exit 0"}); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	cpu, err := readCPU(log, filepath.Dir(pkg))
	if err != nil {
		t.Fatal(err)
	}
	if len(cpu) != 1 || cpu[0].pkg != filepath.Base(pkg) {
		t.Fatalf("CPU per package = %+v, want one package named %s", cpu, filepath.Base(pkg))
	}
	if got := cpu[0].user + cpu[0].sys; got < 0.05 {
		t.Errorf("recorded %.2f s of CPU for a subshell's busy loop: the waited-for processes are not counted", got)
	}
}

func TestReadCPUSumsPerPackageMostFirst(t *testing.T) {
	log := filepath.Join(t.TempDir(), "cpu.log")
	lines := "/repo/a\t1.0\t0.5\n/repo/b\t10.0\t1.0\nnot a line\n/repo/a\t2.0\t0.5\n/elsewhere/c\t0.5\t0.0\n"
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	cpu, err := readCPU(log, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	want := []packageCPU{{"b", 10, 1}, {"a", 3, 1}, {"/elsewhere/c", 0.5, 0}}
	if len(cpu) != len(want) {
		t.Fatalf("got %+v, want %+v", cpu, want)
	}
	for i := range want {
		if cpu[i] != want[i] {
			t.Errorf("package %d: got %+v, want %+v", i, cpu[i], want[i])
		}
	}
}
