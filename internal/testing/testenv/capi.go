package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// AllManagers are the managers of a complete local Cluster API: core,
// kubeadm bootstrap and control plane, and CAPD with its in-memory backend.
var AllManagers = []string{CoreManager, KubeadmBootstrapManager, KubeadmControlPlaneManager, InMemoryManager}

// StartClusterAPI runs a management cluster for a test: etcd and
// kube-apiserver, Cluster API's CRDs and every manager in AllManagers, each
// with its webhooks answering. Skipped under -short.
func StartClusterAPI(t TB) *APIServer {
	t.Helper()
	if _, runWide := t.(*PlaneRun); !runWide {
		NeedsOwnCAPD(t)
	}
	s := Start(t)
	s.InstallClusterAPI(t)
	s.StartManagers(t, AllManagers...)
	return s
}

// processEnv is the environment of a process the environment starts; nil
// inherits the test's. CAPD's in-memory backend serves each workload
// cluster's API server on POD_IP, which must be loopback here.
//
// kube-apiserver collects garbage half as often as Go's default (GOGC=200,
// unless the test's environment sets GOGC): with Cluster API's and the
// providers' CRDs its live heap is about 220 MB, and a collection every
// 100% of growth took a quarter of its CPU. Measured with process
// accounting on TestOpenStackClustersThroughTheCLIOnTheCAPOStandIn, the
// test's two API servers used 108.5 s of CPU instead of 122.7 s; the cost
// is a heap goal of about 660 MB instead of 440 MB for a management
// plane's API server.
func processEnv(name string) []string {
	switch {
	case name == InMemoryManager:
		return append(os.Environ(), "POD_IP=127.0.0.1")
	case strings.HasPrefix(name, "kube-apiserver") && os.Getenv("GOGC") == "":
		return append(os.Environ(), "GOGC=200")
	}
	return nil
}

// inMemoryLockPath serialises CAPD processes on this machine: its in-memory
// backend always listens on port 19000 (debug) and on 20000 upwards (one
// port per workload cluster) on every interface, so a second CAPD fails to
// start or steals the first one's workload ports. Tests of several packages
// run at once, and hack/local-mgmt.sh holds the same lock.
var inMemoryLockPath = filepath.Join(os.TempDir(), "magnetite-capd-inmemory.lock")

// lockInMemory waits (up to timeout) for the machine-wide CAPD lock and
// returns the open lock file; closing it releases the lock.
func lockInMemory(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(inMemoryLockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testenv: open %s: %w", inMemoryLockPath, err)
	}
	err = poll(ctx, func() (bool, error) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("testenv: another CAPD holds %s (a parallel test or hack/local-mgmt.sh): %w", inMemoryLockPath, err)
	}
	return f, nil
}

// holdInMemoryLock takes the CAPD lock for the process about to start and
// releases it once that process has exited (the lock must outlive the
// process, so it is tied to its exit rather than to a test cleanup).
func (s *APIServer) holdInMemoryLock(t TB, start func() error) {
	t.Helper()
	// A shared plane holds the lock for its whole test binary: under a
	// plain `go test ./...` (no run-wide plane) another package's may
	// hold it for most of that package's run.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	lock, err := lockInMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := start(); err != nil {
		lock.Close()
		t.Fatal(err)
	}
	p := s.procs[len(s.procs)-1]
	go func() {
		<-p.done
		lock.Close()
	}()
}
