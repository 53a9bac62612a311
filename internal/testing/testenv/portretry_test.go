package testenv

import (
	"net"
	"sync/atomic"
	"testing"
)

// TestAManagerWhosePortWasTakenStartsAgainElsewhere: a port freePorts
// found free is taken before the manager listens on it (another test's
// plane starting at the same moment); the manager exits, and StartManagers
// starts it again on other ports instead of waiting three minutes and
// failing the test.
func TestAManagerWhosePortWasTakenStartsAgainElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and a Cluster API manager; runs in the full suite")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var calls atomic.Int32
	managerPorts = func(n int) ([]int, error) {
		ports, err := freePorts(n)
		if err == nil && calls.Add(1) == 1 {
			ports[2] = taken.Addr().(*net.TCPAddr).Port // the diagnostics port
		}
		return ports, err
	}
	t.Cleanup(func() { managerPorts = freePorts })
	s := Start(t)
	s.InstallClusterAPI(t)
	s.StartManagers(t, KubeadmBootstrapManager)
	if n := calls.Load(); n != 2 {
		t.Errorf("ports were picked %d times, want twice: the taken port, then others", n)
	}
}
