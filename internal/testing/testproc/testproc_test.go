package testproc_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// killedEnv, set, makes TestAServiceGoesWithTheTestProcess the killed
// test process: it starts a service, prints its PID and waits.
const killedEnv = "MAGNETITE_TESTPROC_KILLED_PROCESS"

// TestAServiceGoesWithTheTestProcess: a service a test process started
// (Keystone's uwsgi, MariaDB, magnetite serve) ends when the test process
// ends without stopping it, killed or interrupted.
func TestAServiceGoesWithTheTestProcess(t *testing.T) {
	if os.Getenv(killedEnv) != "" {
		if _, err := testproc.Start(exec.Command("sleep", "600"), ""); err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAServiceGoesWithTheTestProcess$")
	cmd.Env = append(os.Environ(), killedEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The helper's one child is the service.
	var child int
	testenv.WaitFor(t, "the test process to start its service", 30*time.Second, func() (bool, string) {
		child = childOf(cmd.Process.Pid)
		return child != 0, "no child yet"
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testenv.WaitFor(t, fmt.Sprintf("the killed test process's service (PID %d) to end", child), 30*time.Second, func() (bool, string) {
		return !live(child), "still running"
	})
}

// childOf is the PID of a process whose parent is pid, 0 when none.
func childOf(pid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := stat(p); ppid == pid {
			return p
		}
	}
	return 0
}

// live says whether pid runs (a process that ended and waits to be
// reaped does not).
func live(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	_, state := stat(pid)
	return state != "" && state != "Z"
}

// stat reads a process's parent and state from /proc/<pid>/stat.
func stat(pid int) (ppid int, state string) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid ...: the name ends at the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}
