package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/apitypes"
	"github.com/magnetite-io/magnetite/internal/model"
	"github.com/magnetite-io/magnetite/internal/testing/testapi"
	"github.com/magnetite-io/magnetite/internal/testing/testtty"
)

// TestHelperMagnetiteProcess is the magnetite command when the terminal
// test starts this test binary inside tmux; otherwise it does nothing.
func TestHelperMagnetiteProcess(t *testing.T) {
	if os.Getenv("MAGNETITE_TEST_HELPER") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Args = append([]string{"magnetite"}, args...)
	main()
	os.Exit(0)
}

// TestClusterCreateWaitDrawsProgressInATerminal runs `magnetite cluster
// create --wait` on a real terminal (a tmux pane) and checks what a user
// sees: the progress block redrawn in place with x/y ready per group, the
// latest condition message, and the final state and exit status. The
// status changes are written to the store as the conductor writes them;
// this tests the client's drawing, not provisioning.
func TestClusterCreateWaitDrawsProgressInATerminal(t *testing.T) {
	for _, tc := range []struct {
		final      conductorStep
		wantScreen []string
		wantExit   int
	}{
		{
			final: conductorStep{status: model.CreateComplete, reason: "Cluster API reports the cluster available with every node ready",
				workers: model.CreateComplete, health: map[string]string{"cluster": "ok", "control_plane": "ok (1/1 ready)", "nodegroup default-worker": "2/2 ready"}},
			wantScreen: []string{"Cluster c1: CREATE_COMPLETE", "control plane              1/1 ready", "node group default-worker  2/2 ready",
				"Cluster API reports the cluster available with every node ready", "Cluster c1 is CREATE_COMPLETE after"},
		},
		{
			final: conductorStep{status: model.CreateFailed, reason: "Timed out after 60 minutes; last reported problem: machine w-1: InstanceCreateFailed",
				workers: model.CreateFailed, health: map[string]string{"control_plane": "ok (1/1 ready)", "nodegroup default-worker": "1/2 ready: machine w-1: InstanceCreateFailed"}},
			wantScreen: []string{"Cluster c1: CREATE_FAILED", "node group default-worker  1/2 ready: machine w-1: InstanceCreateFailed",
				"magnetite: cluster c1 is CREATE_FAILED: Timed out after 60 minutes; last reported problem: machine w-1: InstanceCreateFailed"},
			wantExit: 1,
		},
	} {
		t.Run(string(tc.final.status), func(t *testing.T) {
			srv := testapi.Start(t)
			createTemplate(t, srv, "k8s")
			term := testtty.Start(t, 110, 30, []string{"MAGNETITE_TEST_HELPER=1"}, os.Args[0], "-test.run=^TestHelperMagnetiteProcess$", "--",
				"cluster", "create", "c1", "--cluster-template", "k8s", "--node-count", "2", "--wait", "--poll-interval", "100ms",
				"--os-endpoint", srv.URL, "--os-token", "test-token")
			uuid := clusterUUIDByName(t, srv.Store, "c1")
			term.WaitFor("Cluster c1: CREATE_IN_PROGRESS", "control plane              ?/1", "node group default-worker  ?/2",
				"Waiting for a conductor to start provisioning")

			applyStep(t, srv.Store, uuid, buildSteps[0])
			term.WaitFor("Waiting for Cluster API to create the cluster")
			applyStep(t, srv.Store, uuid, buildSteps[1])
			term.WaitFor("control plane              0/1 ready", "node group default-worker  0/2 ready")
			applyStep(t, srv.Store, uuid, buildSteps[2])
			s := term.WaitFor("control plane              1/1 ready",
				"node group default-worker  1/2 ready: machine w-1: InfrastructureReady=False WaitingForServer",
				"node group default-worker: machine w-1: InfrastructureReady=False WaitingForServer", "elapsed 0m0")
			// Drawn in place: one block, the earlier messages overwritten.
			if n := strings.Count(s, "Cluster c1: "); n != 1 {
				t.Errorf("the progress block appears %d times; want it redrawn in place:\n%s", n, s)
			}
			if strings.Contains(s, "Waiting for") {
				t.Errorf("an earlier condition message is still on the screen:\n%s", s)
			}

			applyStep(t, srv.Store, uuid, tc.final)
			if got := term.ExitStatus(); got != tc.wantExit {
				t.Errorf("exit status %d, want %d", got, tc.wantExit)
			}
			s = term.WaitFor(tc.wantScreen...)
			if n := strings.Count(s, "Cluster c1: "); n != 1 {
				t.Errorf("the final block appears %d times:\n%s", n, s)
			}
		})
	}
}

// TestWaitClockCountsFromTheOperationsStart: the elapsed time of a watched
// update counts from when the update began (updated_at at the first sight
// of the cluster in progress), not from the latest status the conductor
// wrote, which moves updated_at on every change.
func TestWaitClockCountsFromTheOperationsStart(t *testing.T) {
	began := time.Date(2026, 11, 23, 10, 0, 3, 0, time.UTC)
	at := func(d time.Duration) *string { s := began.Add(d).Format(time.RFC3339); return &s }
	clock := opClock{began: began}
	cl := &apitypes.Cluster{}
	cl.Status, cl.CreatedAt, cl.UpdatedAt = "UPDATE_IN_PROGRESS", began.Add(-time.Hour).Format(time.RFC3339), at(-3*time.Second)
	if got := clock.elapsed(cl, began); got != 3*time.Second {
		t.Errorf("first sight: %s, want 3s", got)
	}
	// The conductor writes progress and then completion: updated_at moves.
	cl.UpdatedAt = at(15 * time.Second)
	if got := clock.elapsed(cl, began.Add(16*time.Second)); got != 19*time.Second {
		t.Errorf("mid-update: %s, want 19s", got)
	}
	cl.Status, cl.UpdatedAt = "UPDATE_COMPLETE", at(21*time.Second)
	if got := clock.elapsed(cl, began.Add(22*time.Second)); got != 25*time.Second {
		t.Errorf("at completion: %s, want 25s", got)
	}
	// A cluster already settled at first sight counts from the command.
	settled := opClock{began: began}
	if got := settled.elapsed(cl, began.Add(2*time.Second)); got != 2*time.Second {
		t.Errorf("settled at first sight: %s, want 2s", got)
	}
}
