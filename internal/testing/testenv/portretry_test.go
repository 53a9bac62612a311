package testenv

import (
	"net"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	calls := takeOnce(t, &managerPorts, 2) // the diagnostics port
	s := Start(t)
	s.InstallClusterAPI(t)
	s.StartManagers(t, KubeadmBootstrapManager)
	if n := calls.Load(); n != 2 {
		t.Errorf("ports were picked %d times, want twice: the taken port, then others", n)
	}
}

// TestAnEtcdWhosePortWasTakenStartsAgainElsewhere: the peer port freePorts
// found free is taken before etcd listens on it (seen in a full run: etcd
// exited with "bind: address already in use" and the test waited two
// minutes for its health); Start starts etcd again on other ports.
func TestAnEtcdWhosePortWasTakenStartsAgainElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver; runs in the full suite")
	}
	calls := takeOnce(t, &planePorts, 1) // etcd's peer port
	s := Start(t)
	if n := calls.Load(); n != 2 {
		t.Errorf("ports were picked %d times, want twice: the taken port, then others", n)
	}
	if _, err := s.Dynamic(t).Resource(crdGVR).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("the API server on the second etcd: %v", err)
	}
}

// TestAnAPIServerWhosePortWasTakenStartsAgainElsewhere: kube-apiserver's
// port is taken the same way; Start starts it again on another port, and
// clients reach it there.
func TestAnAPIServerWhosePortWasTakenStartsAgainElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver; runs in the full suite")
	}
	calls := takeOnce(t, &planePorts, 2) // kube-apiserver's port
	s := Start(t)
	if n := calls.Load(); n != 2 {
		t.Errorf("ports were picked %d times, want twice: the taken port, then another", n)
	}
	if _, err := s.Dynamic(t).Resource(crdGVR).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("the API server on its second port: %v", err)
	}
}

// takeOnce makes *pick hand out, the first time, a port another listener
// holds in place of its i-th, until the test ends, and counts its calls.
func takeOnce(t *testing.T, pick *func(int) ([]int, error), i int) *atomic.Int32 {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Close() })
	calls := new(atomic.Int32)
	*pick = func(n int) ([]int, error) {
		ports, err := freePorts(n)
		if err == nil && calls.Add(1) == 1 {
			ports[i] = taken.Addr().(*net.TCPAddr).Port
		}
		return ports, err
	}
	t.Cleanup(func() { *pick = freePorts })
	return calls
}
