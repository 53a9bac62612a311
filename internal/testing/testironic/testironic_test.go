package testironic

import (
	"net"
	"net/http"
	"testing"
)

// TestIronicWhosePortWasTakenStartsAgainElsewhere: the port Ironic was
// given is taken before it listens, by a server that answers /v1 as
// Ironic would; StartIronic does not take that server for its Ironic and
// starts Ironic again on another port.
func TestIronicWhosePortWasTakenStartsAgainElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Ironic from Debian's packages; runs in the full suite (hack/test.sh)")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	impostor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })}
	go func() { _ = impostor.Serve(taken) }()
	t.Cleanup(func() { impostor.Close() })
	var ports []int
	ironicPort = func(t testing.TB) int {
		p := freePort(t, "tcp")
		if len(ports) == 0 {
			p = taken.Addr().(*net.TCPAddr).Port
		}
		ports = append(ports, p)
		return p
	}
	t.Cleanup(func() { ironicPort = func(t testing.TB) int { return freePort(t, "tcp") } })
	irc := StartIronic(t)
	if len(ports) != 2 {
		t.Fatalf("ports picked: %v, want the taken one, then another", ports)
	}
	resp, err := http.Get(irc.URL + "/v1/nodes")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || irc.URL == "http://"+taken.Addr().String() {
		t.Errorf("Ironic at %s answered %d for /v1/nodes", irc.URL, resp.StatusCode)
	}
}
