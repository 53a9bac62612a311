package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// A test that runs a CAPD of its own cannot share the machine with the
// run-wide plane's: CAPD's in-memory backend binds fixed loopback ports.
// In a network namespace of its own it has a loopback of its own, and so
// runs while the other packages do instead of after them. testrun makes
// one when the kernel lets it (as root: CI's case); otherwise such tests
// wait for the plane to stop, as they did before.

// netnsFlag, as testrun's first argument, makes it the first process of a
// new network namespace: it brings the namespace's loopback up and
// becomes the command that follows.
const netnsFlag = "--in-netns"

// subcommand runs what testrun's first argument names when testrun runs
// as a helper of itself, and reports whether it did.
func subcommand(args []string) (code int, ok bool) {
	switch {
	case len(args) > 1 && args[0] == execCPUFlag:
		return execCPU(args[1:]), true
	case len(args) > 1 && args[0] == netnsFlag:
		return inNetns(args[1:]), true
	case len(args) == 2 && args[0] == netnsProbeFlag:
		return netnsProbe(args[1]), true
	}
	return 0, false
}

// inNetns brings up the loopback of the network namespace it was started
// in and replaces itself with args; it returns only on failure.
func inNetns(args []string) int {
	if err := loopbackUp(); err != nil {
		fmt.Fprintln(os.Stderr, "testrun: bringing up the loopback of a new network namespace:", err)
		return 1
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = syscall.Exec(path, args, os.Environ())
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// loopbackUp sets the lo interface up: a new network namespace has it
// down, and nothing can listen on 127.0.0.1 until it is up.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// inOwnNetns rewrites cmd so that it runs in a network namespace of its
// own, through testrun (self) bringing up the namespace's loopback.
func inOwnNetns(cmd *exec.Cmd, self string) {
	cmd.Args = append([]string{self, netnsFlag}, cmd.Args...)
	cmd.Path = self
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
}

// netnsWorks reports whether testrun can run a command in a network
// namespace of its own, with a loopback it can listen on; when it cannot,
// the error says why.
func netnsWorks() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, netnsProbeFlag, "19000")
	inOwnNetns(cmd, self)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v %s", err, out)
	}
	return nil
}

// netnsProbeFlag, followed by a port, makes testrun listen on that port
// of 127.0.0.1 and exit 0 if it could: in a new network namespace, on
// 19000, the port the run-wide plane's CAPD holds.
const netnsProbeFlag = "--netns-probe"

// netnsProbe listens on 127.0.0.1:port and reports whether it could.
func netnsProbe(port string) int {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln.Close()
	return 0
}
