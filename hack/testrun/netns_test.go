package main

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestMain lets the test binary stand in for testrun when it starts
// itself as testrun's helpers.
func TestMain(m *testing.M) {
	if code, ok := subcommand(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestOwnNetnsHasALoopbackOfItsOwn holds a loopback port, as the run-wide
// plane's CAPD holds 19000, and checks that a command testrun runs in a
// network namespace of its own can listen on it, where one beside the
// holder cannot.
func TestOwnNetnsHasALoopbackOfItsOwn(t *testing.T) {
	if err := netnsWorks(); err != nil {
		t.Skipf("testrun cannot make a network namespace here (it then runs the tests that need a CAPD of their own after the plane): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(self, netnsProbeFlag, port).CombinedOutput(); err == nil {
		t.Errorf("listening on held port %s beside its holder succeeded; want it refused (%s)", port, out)
	}
	cmd := exec.Command(self, netnsProbeFlag, port)
	inOwnNetns(cmd, self)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("listening on port %s in a network namespace of its own: %v %s", port, err, out)
	}
}
