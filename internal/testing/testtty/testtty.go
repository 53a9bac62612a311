// Package testtty gives a command a real terminal for a test: a tmux pane
// of fixed size on a tmux server of its own (its own socket), so that what
// a user would see (lines redrawn in place, colours, the final screen) can
// be read back.
package testtty

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

// Pane is a tmux pane running one command; its shell prints the command's
// exit status after it ("[exit N]") and keeps the screen as the command
// left it.
type Pane struct {
	t      *testing.T
	socket string
}

// Start runs argv in a new pane of width × height columns and lines, with
// TERM=xterm-256color and the NAME=value settings of env, and stops its
// tmux server at cleanup. It skips under -short.
func Start(t *testing.T, width, height int, env []string, argv ...string) *Pane {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs tmux (hack/ci-packages.txt) to give the command a real terminal; runs in the full suite")
	}
	testproc.Require(t, "tmux")
	p := &Pane{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	args := []string{"-f", "/dev/null", "new-session", "-d", "-s", "tty", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height)}
	for _, e := range append(env, "TERM=xterm-256color") {
		args = append(args, "-e", e)
	}
	shell := `"$0" "$@"; echo "[exit $?]"; exec sleep 3600`
	p.tmux(append(append(args, "sh", "-c", shell), argv...)...)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	return p
}

func (p *Pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Screen is what the pane shows now, wrapped lines joined.
func (p *Pane) Screen() string { return p.tmux("capture-pane", "-p", "-J", "-t", "tty") }

// WaitFor polls the screen until every wanted text is on it at once (for
// at most 20 s: a command redraws well within that) and returns the
// screen.
func (p *Pane) WaitFor(want ...string) string {
	p.t.Helper()
	var s string
	testenv.WaitEvery(p.t, fmt.Sprintf("the terminal to show %q", want), 20*time.Second, 50*time.Millisecond, func() (bool, string) {
		s = p.Screen()
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false, "missing " + strconv.Quote(w) + "; it shows:\n" + s
			}
		}
		return true, ""
	})
	return s
}

// ExitStatus waits for the command to end and returns its exit status.
func (p *Pane) ExitStatus() int {
	p.t.Helper()
	s := p.WaitFor("[exit ")
	var status int
	if _, err := fmt.Sscanf(s[strings.Index(s, "[exit "):], "[exit %d]", &status); err != nil {
		p.t.Fatalf("no exit status on the screen: %v\n%s", err, s)
	}
	return status
}
