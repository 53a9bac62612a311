package certs

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"sync/atomic"
)

// keyBits is the size of every RSA key a cluster gets.
const keyBits = 2048

// KeyPool keeps a few RSA keys generated ahead of time, so that a cluster
// create does not spend the seconds four keys take on a busy CPU while its
// client waits. Every key is handed out once: a key leaves the pool by
// being received from a channel, which exactly one receiver does, and the
// refill makes a new key for every one it adds. When the pool is empty (a
// burst of creates), Take makes a key inline, as if there were no pool.
//
// A nil *KeyPool is valid: it generates every key inline.
type KeyPool struct {
	keys chan *rsa.PrivateKey
	// generated counts the keys the refill made; taken and inline count
	// the keys handed out, and those of them made by Take itself.
	generated, taken, inline atomic.Int64
}

// NewKeyPool makes a pool that holds up to size keys once Run fills it.
func NewKeyPool(size int) *KeyPool {
	return &KeyPool{keys: make(chan *rsa.PrivateKey, max(size, 1))}
}

// Run fills the pool and keeps it full until ctx ends, one key at a time
// on one goroutine (the caller's). A full pool waits without using the CPU;
// at most one key beyond the pool's size is made ahead.
func (p *KeyPool) Run(ctx context.Context) error {
	for {
		key, err := rsa.GenerateKey(rand.Reader, keyBits)
		if err != nil {
			return fmt.Errorf("certs: generate a key for the pool: %w", err)
		}
		p.generated.Add(1)
		select {
		case p.keys <- key:
		case <-ctx.Done():
			return nil
		}
	}
}

// Take hands out a key nobody else has been or will be given: one from the
// pool, or a new one when the pool is empty.
func (p *KeyPool) Take() (*rsa.PrivateKey, error) {
	if p != nil {
		p.taken.Add(1)
		select {
		case key := <-p.keys:
			return key, nil
		default:
			p.inline.Add(1)
		}
	}
	return rsa.GenerateKey(rand.Reader, keyBits)
}

// KeyPoolStats are a pool's counters since it was made.
type KeyPoolStats struct {
	// Ready is how many keys the pool holds now.
	Ready int
	// Generated is how many keys the refill has made.
	Generated int64
	// Taken is how many keys were handed out; Inline how many of them Take
	// had to make because the pool was empty.
	Taken, Inline int64
}

// Stats reports the pool's counters.
func (p *KeyPool) Stats() KeyPoolStats {
	if p == nil {
		return KeyPoolStats{}
	}
	return KeyPoolStats{Ready: len(p.keys), Generated: p.generated.Load(), Taken: p.taken.Load(), Inline: p.inline.Load()}
}

// Size is how many keys a full pool holds.
func (p *KeyPool) Size() int {
	if p == nil {
		return 0
	}
	return cap(p.keys)
}
