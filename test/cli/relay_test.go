package cli

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// relay carries loopback TCP connections to a server, and can cut them:
// while cut, every open connection is closed and each new one is reset as
// it arrives, as when the server has gone down. It lets one test take a
// shared server away from its own client alone. It holds its port for
// the whole test, cut or not: a relay that let go of its port while cut
// once saw another test's server take it, and its client got that
// server's HTTP answers instead of an outage.
type relay struct {
	addr, target string
	ln           net.Listener

	mu    sync.Mutex
	off   bool // cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startRelay listens on a free loopback port and carries what arrives to
// target until the test ends.
func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			r.mu.Lock()
			off := r.off
			r.mu.Unlock()
			if off {
				reset(c)
				continue
			}
			r.carry(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		r.cut()
		r.wg.Wait()
	})
	return r
}

// reset closes c with a TCP reset, as a host with nothing on the port
// answers.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// cut closes every connection and resets new ones until restore.
func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.off = true
	for c := range r.conns {
		c.Close()
		delete(r.conns, c)
	}
}

// restore carries new connections again.
func (r *relay) restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.off = false
}

// carry copies both ways between c and a new connection to the target.
func (r *relay) carry(c net.Conn) {
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		c.Close()
		return
	}
	r.mu.Lock()
	if r.off {
		// Cut while dialling.
		r.mu.Unlock()
		reset(c)
		up.Close()
		return
	}
	r.conns[c], r.conns[up] = struct{}{}, struct{}{}
	r.mu.Unlock()
	r.wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer r.wg.Done()
		_, _ = io.Copy(dst, src)
		// One side ended: end both, as a server going away does.
		dst.Close()
		src.Close()
		r.mu.Lock()
		delete(r.conns, dst)
		delete(r.conns, src)
		r.mu.Unlock()
	}
	go pipe(up, c)
	go pipe(c, up)
}
