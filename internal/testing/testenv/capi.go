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
// kube-apiserver collects garbage a third as often as Go's default
// (GOGC=300, unless the test's environment sets GOGC): with Cluster API's
// and the providers' CRDs its live heap is 220 to 360 MB, and a collection
// every 100% of growth took a quarter of its CPU. Measured with process
// accounting on TestOpenStackClustersThroughTheCLIOnTheCAPOStandIn, GOGC=200
// brought the test's two API servers from 122.7 s of CPU to 108.5 s.
// GOGC=300 then saved another 2.3 CPU-s on average (0.9 to 3.5 s in each of
// seven pairs of interleaved runs, ServerCPULogEnv) of the 27 to 30 the
// API server and etcd of TestEveryOSProfileBootsTheControlPlaneClusterAPIWrites
// use. The price is memory: that API server's peak resident memory rose
// from 1233 MiB to 1553 MiB (GOGC=400 saved hardly more CPU and took 2062
// MiB). The most seen in the last twenty minutes of a full suite was twelve
// API servers holding 8.9 GB at GOGC=200, with 13.6 GB of the machine's 24
// in use: this is the setting to lower again if the suite's memory runs
// short.
// GOGCPercent is the GOGC kube-apiserver runs at unless the environment
// sets one, and the one hack/testrun gives every Go program of the suite.
const GOGCPercent = "300"

func processEnv(name string) []string {
	switch {
	case name == InMemoryManager:
		return append(os.Environ(), "POD_IP=127.0.0.1")
	case strings.HasPrefix(name, "kube-apiserver") && os.Getenv("GOGC") == "":
		return append(os.Environ(), "GOGC="+GOGCPercent)
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
