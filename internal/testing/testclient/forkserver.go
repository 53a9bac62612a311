package testclient

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// forkServerPy is the interpreter that imports the CLI once and forks a
// process running Debian's openstack script for each command.
//
//go:embed forkserver.py
var forkServerPy []byte

// Result is what one command of the CLI did.
type Result struct {
	Stdout, Stderr string
	// Code is the exit code of the command's process.
	Code int
}

// forkServer is an interpreter commands are forked from: one per
// environment and working directory a CLI runs commands with.
type forkServer struct {
	ready sync.Once
	sock  string // in a directory of its own, beside the server's script
	err   error
	// stdin is the server's: it ends when stdin closes (Stop, or this
	// process ending), so that no interpreter outlives its tests.
	stdin *os.File
	// died is closed when the server has exited, with its error in exit
	// and what it wrote to stderr in log.
	died chan struct{}
	exit error
	log  bytes.Buffer
}

// forkServers are the servers of one CLI (OpenStack), stopped when its
// test ends.
type forkServers struct {
	mu    sync.Mutex
	byEnv map[string]*forkServer
	done  bool
}

func (fs *forkServers) get(key string) (*forkServer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.done {
		return nil, errors.New("testclient: a command run after its test ended")
	}
	s := fs.byEnv[key]
	if s == nil {
		s = &forkServer{died: make(chan struct{})}
		fs.byEnv[key] = s
	}
	return s, nil
}

// stop ends every server and waits for them to exit.
func (fs *forkServers) stop() {
	fs.mu.Lock()
	fs.done = true
	all := fs.byEnv
	fs.mu.Unlock()
	for _, s := range all {
		s.ready.Do(func() { s.err = errors.New("testclient: stopped") })
		if s.stdin != nil {
			s.stdin.Close()
			<-s.died
		}
	}
}

// Run runs one command of the CLI, as Command would, and returns its
// output and exit code; err is set when the command could not run to its
// end (ctx ended first, or the CLI's interpreter could not run it).
//
// Each command is a process of its own running Debian's script as
// __main__, with argv, environment (env and Env), working directory,
// stdout and stderr of its own and /dev/null as stdin, and its exit code
// is the process's. The process is forked from an interpreter that was
// started as the script is, with the same environment and working
// directory (one per CLI and environment), and has imported the CLI's
// modules and the command plugins its packages declare, instead of
// importing them again for each command:
// a command then costs about 0.2 CPU-seconds instead of 1 (most of which
// was importing openstacksdk, keystoneauth1 and the clients' plugins and
// compiling their regular expressions), which over test/cli's 230
// commands was an eighth of the suite's CPU. What modules read from the
// environment as they are imported (openstacksdk the places of
// clouds.yaml, from HOME and the working directory) is therefore what
// the script would read. TestForkedCommandsAreTheScripts holds the two
// ways to the same output.
func (c CLI) Run(ctx context.Context, env []string, args ...string) (Result, error) {
	if len(c.Argv) == 0 {
		panic("testclient: a CLI not made by OpenStack")
	}
	dir, err := os.Getwd()
	if err != nil {
		return Result{}, err
	}
	env = append(append([]string{}, env...), c.Env...)
	srv, err := c.servers.get(strings.Join(env, "\x00") + "\x00\x00" + dir)
	if err != nil {
		return Result{}, err
	}
	srv.ready.Do(func() { srv.err = srv.start(env, dir) })
	if srv.err != nil {
		return Result{}, srv.err
	}
	req, err := json.Marshal(map[string]any{"argv": args, "env": env, "dir": dir})
	if err != nil {
		return Result{}, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", srv.sock)
	if err != nil {
		return Result{}, srv.error(err)
	}
	conn := nc.(*net.UnixConn)
	defer conn.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{}, err
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return Result{}, err
	}
	defer errR.Close()
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(req)))
	_, _, err = conn.WriteMsgUnix(append(msg, req...), syscall.UnixRights(int(outW.Fd()), int(errW.Fd())), nil)
	outW.Close()
	errW.Close()
	if err != nil {
		return Result{}, srv.error(err)
	}
	// The caller giving up closes the connection (the server then kills
	// the command) and stops reading the command's output.
	stop := context.AfterFunc(ctx, func() {
		conn.Close()
		outR.Close()
		errR.Close()
	})
	defer stop()
	var stdout, stderr bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(&stdout, outR) })
	wg.Go(func() { _, _ = io.Copy(&stderr, errR) })
	line, readErr := bufio.NewReader(conn).ReadBytes('\n')
	wg.Wait()
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if readErr != nil {
		return Result{}, srv.error(readErr)
	}
	var ans struct {
		Code   *int   `json:"code"`
		Signal int    `json:"signal"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(line, &ans); err != nil {
		return Result{}, fmt.Errorf("testclient: the CLI's interpreter answered %q: %w", line, err)
	}
	switch {
	case ans.Error != "":
		return Result{}, fmt.Errorf("testclient: the CLI's interpreter refused the command: %s", ans.Error)
	case ans.Code == nil:
		return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: -1},
			fmt.Errorf("openstack %s: killed by signal %d", strings.Join(args, " "), ans.Signal)
	}
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: *ans.Code}, nil
}

// error is err, with the server's own words when it has died.
func (s *forkServer) error(err error) error {
	select {
	case <-s.died:
		return fmt.Errorf("testclient: the CLI's interpreter exited (%v): %w\n%s", s.exit, err, s.log.String())
	default:
		return fmt.Errorf("testclient: the CLI's interpreter: %w", err)
	}
}

// start starts the interpreter commands are forked from, with the
// commands' environment and working directory, in a directory of its
// own, and waits until it listens.
func (s *forkServer) start(env []string, workdir string) error {
	dir, err := os.MkdirTemp("", "openstack-cli-")
	if err != nil {
		return err
	}
	if len(dir) > 90 { // a Unix socket's path holds 107 bytes
		if dir2, err := os.MkdirTemp("/tmp", "openstack-cli-"); err == nil {
			os.Remove(dir)
			dir = dir2
		}
	}
	s.sock = filepath.Join(dir, "s")
	script := filepath.Join(dir, "forkserver.py")
	if err := os.WriteFile(script, forkServerPy, 0o600); err != nil {
		return err
	}
	cmd := exec.Command(Python, "-S", script, s.sock)
	cmd.Env, cmd.Dir = env, workdir
	stdin, keep, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdin = stdin
	ready, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = &s.log
	if err := cmd.Start(); err != nil {
		return err
	}
	stdin.Close()
	s.stdin = keep
	go func() {
		s.exit = cmd.Wait()
		// The server removes it as it ends; not when it was killed.
		os.RemoveAll(dir)
		close(s.died)
	}()
	line, err := bufio.NewReader(ready).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		keep.Close()
		<-s.died
		return fmt.Errorf("testclient: the CLI's interpreter did not start (%v, %v):\n%s", err, s.exit, s.log.String())
	}
	return nil
}
