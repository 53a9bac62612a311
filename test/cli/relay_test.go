package cli

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/testing/testenv"
)

// relay carries loopback TCP connections to a server, and can cut them:
// while cut, every open connection is closed and new ones are refused, as
// when the server is down. It lets one test take a shared server away
// from its own client alone.
type relay struct {
	addr, target string

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startRelay listens on a free loopback port and carries what arrives to
// target until the test ends.
func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	r := &relay{addr: freeAddr(t), target: target, conns: map[net.Conn]struct{}{}}
	r.restore(t)
	t.Cleanup(func() {
		r.cut()
		r.wg.Wait()
	})
	return r
}

// cut closes the listener and every connection: clients are refused until
// restore.
func (r *relay) cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for c := range r.conns {
		c.Close()
		delete(r.conns, c)
	}
}

// restore listens again on the same address.
func (r *relay) restore(t *testing.T) {
	t.Helper()
	var ln net.Listener
	// The port was ours a moment ago; a listener closed with connections
	// may need a moment before the address is free again.
	testenv.WaitFor(t, "the relay to listen on "+r.addr, 10*time.Second, func() (bool, string) {
		var err error
		if ln, err = net.Listen("tcp", r.addr); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
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
			r.carry(c)
		}
	}()
}

// carry copies both ways between c and a new connection to the target.
func (r *relay) carry(c net.Conn) {
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		c.Close()
		return
	}
	r.mu.Lock()
	if r.ln == nil {
		// Cut while dialling.
		r.mu.Unlock()
		c.Close()
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
