package certs

import (
	"context"
	"crypto/rsa"
	"sync"
	"testing"
	"time"
)

// waitFull waits until the pool holds Size keys.
func waitFull(t *testing.T, p *KeyPool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for p.Stats().Ready < p.Size() {
		if time.Now().After(deadline) {
			t.Fatalf("the pool never refilled: %+v", p.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// createClusters makes n clusters' key pairs at once from the pool and
// returns every private key's modulus.
func createClusters(t *testing.T, p *KeyPool, n int) []string {
	t.Helper()
	var mu sync.Mutex
	var out []string
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pairs, err := p.GenerateCluster()
			if err != nil {
				t.Error(err)
				return
			}
			for _, kp := range pairs {
				key, err := parsePrivateKey(kp.Key)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				out = append(out, key.(*rsa.PrivateKey).N.String())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

func TestKeyPoolNeverHandsOutAKeyTwice(t *testing.T) {
	p := NewKeyPool(4)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()

	waitFull(t, p)
	// Four clusters at once need sixteen keys: the pool's four, and the
	// rest made inline while the pool refills behind them.
	keys := createClusters(t, p, 4)
	if st := p.Stats(); st.Taken != 16 || st.Inline == 0 || st.Taken-st.Inline < 4 {
		t.Errorf("after draining the pool: %+v; want 16 taken, the pool's 4 among them and some made inline", st)
	}
	// The pool refills in the background; keys taken afterwards are new
	// ones, not those handed out before.
	waitFull(t, p)
	keys = append(keys, createClusters(t, p, 2)...)

	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Fatalf("a key was handed out twice")
		}
		seen[k] = true
	}
	if len(seen) != 24 {
		t.Errorf("got %d distinct keys, want 24", len(seen))
	}
	// Bounded: the refill made no more keys than were handed out from
	// the pool, plus those it holds, plus the one it may have been
	// waiting to add when it stopped.
	st := p.Stats()
	if extra := st.Generated - (st.Taken - st.Inline) - int64(st.Ready); extra < 0 || extra > 1 {
		t.Errorf("pool stats %+v: the refill made %d keys beyond those handed out and held", st, extra)
	}
}

func TestKeyPoolMakesKeysInlineWhenEmpty(t *testing.T) {
	var none *KeyPool
	idle := NewKeyPool(2)
	for _, p := range []*KeyPool{idle, none} {
		// Not running: nothing refills it.
		a, err := p.Take()
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Take()
		if err != nil {
			t.Fatal(err)
		}
		if a.N.Cmp(b.N) == 0 || a.N.BitLen() != keyBits {
			t.Errorf("inline keys: %d and %d bits, equal=%v; want two distinct %d-bit keys", a.N.BitLen(), b.N.BitLen(), a.N.Cmp(b.N) == 0, keyBits)
		}
	}
	if st := idle.Stats(); st.Ready != 0 || st.Taken != 2 || st.Inline != 2 || st.Generated != 0 {
		t.Errorf("a pool that never ran: %+v; want both keys made inline", st)
	}
}
