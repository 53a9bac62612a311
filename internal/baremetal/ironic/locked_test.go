package ironic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnetite-io/magnetite/internal/baremetal"

	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/v1/nodes"
)

// ironicConflict writes a 409 the way Ironic's API does: the fault is a
// JSON document inside error_message.
func ironicConflict(w http.ResponseWriter, faultstring string) {
	inner, _ := json.Marshal(map[string]any{"faultcode": "Client", "faultstring": faultstring, "debuginfo": nil})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusConflict)
	_ = json.NewEncoder(w).Encode(map[string]string{"error_message": string(inner)})
}

// A power change refused with NodeLocked while Ironic verifies the BMC is
// tried again until the lock is gone; any other conflict is passed on at
// once.
func TestIronicRetriesNodeLockedOnly(t *testing.T) {
	const uuid = "bbd8fb68-b21f-400e-bfb6-6a9f3a1205b7"
	var powerCalls, lockedAnswers, locked atomic.Int32
	locked.Store(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/v1/nodes/"+uuid+"/states/power":
			powerCalls.Add(1)
			if lockedAnswers.Load() < locked.Load() {
				lockedAnswers.Add(1)
				ironicConflict(w, fmt.Sprintf("Node %s is locked by host conductor-1, please retry after the current operation is completed.", uuid))
				return
			}
			w.WriteHeader(http.StatusAccepted)
		case r.Method == http.MethodPut && r.URL.Path == "/v1/nodes/"+uuid+"/states/provision":
			ironicConflict(w, "The requested action \"provide\" can not be performed on node "+uuid+" while it is in state \"enroll\".")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	b, err := New(Config{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	b.lockedWait = time.Millisecond
	ctx := context.Background()

	err = b.retryLocked(ctx, func() error { return powerOn(ctx, b, uuid) })
	if err != nil {
		t.Fatalf("power on after two NodeLocked answers: %v", err)
	}
	if got := powerCalls.Load(); got != 3 {
		t.Errorf("power calls = %d, want 3 (two locked, one accepted)", got)
	}

	// Locked for longer than the retries last: the refusal reaches the caller.
	powerCalls.Store(0)
	lockedAnswers.Store(0)
	locked.Store(100)
	err = b.retryLocked(ctx, func() error { return powerOn(ctx, b, uuid) })
	if !nodeLocked(err) {
		t.Fatalf("still locked: err = %v, want Ironic's NodeLocked", err)
	}
	if got := powerCalls.Load(); got != lockedRetries {
		t.Errorf("power calls = %d, want %d", got, lockedRetries)
	}

	// A state conflict is not retried and keeps Ironic's words.
	err = b.changeState(ctx, uuid, "provide")
	if !errors.Is(err, baremetal.ErrConflict) || nodeLocked(err) {
		t.Fatalf("provide from enroll: err = %v, want ErrConflict", err)
	}
}

func powerOn(ctx context.Context, b *Backend, uuid string) error {
	return nodes.ChangePowerState(ctx, b.client, uuid, nodes.PowerStateOpts{Target: nodes.PowerOn}).ExtractErr()
}
