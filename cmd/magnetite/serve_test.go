package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/config"
)

// serveConfig is the configuration env (MAGNETITE_* settings) gives, with
// the API on a free loopback port.
func serveConfig(t *testing.T, env ...string) *config.Config {
	t.Helper()
	cfg, err := config.Load("", "", append([]string{"MAGNETITE_API_LISTEN=127.0.0.1:0"}, env...))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serveUntil runs serve in-process with cfg, logging to log (nowhere when
// nil), until stop is called or the test ends; stop waits for serve to
// end. It returns serve's address.
func serveUntil(t *testing.T, cfg *config.Config, log *slog.Logger) (addr string, stop func()) {
	t.Helper()
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- serveLogging(ctx, cfg, log, ready) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(stop)
	select {
	case addr = <-ready:
		return addr, stop
	case err := <-done:
		done <- err
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("serve did not start within a minute")
	}
	return "", stop
}

// apiJSON sends method url with body as JSON (none when nil) and the
// header pairs (name, value), and returns the answer and its body.
func apiJSON(t *testing.T, method, url string, body any, header ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}
