package fault

import (
	"errors"
	"fmt"
	"testing"
)

var errKind = errors.New("layer: not found")

func TestErrorKeepsItsKindAndText(t *testing.T) {
	err := fmt.Errorf("handler context: %w", New(errKind, "Cluster %s could not be found.", "c1"))
	if !errors.Is(err, errKind) {
		t.Fatalf("%v is not its kind", err)
	}
	if got, want := Text(err, errKind), "Cluster c1 could not be found."; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	if got, want := err.Error(), "handler context: layer: not found: Cluster c1 could not be found."; got != want {
		t.Errorf("Error = %q, want %q (logs keep the layer)", got, want)
	}
}

func TestTextOfErrorsWithoutOne(t *testing.T) {
	if got := Text(errors.New("BMC address: no host"), errKind); got != "BMC address: no host" {
		t.Errorf("an error of its own words shows %q", got)
	}
}

// TestReasonDropsEveryKindPrefix: what a person reads of an error keeps
// the context each layer added and none of the layers' vocabulary.
func TestReasonDropsEveryKindPrefix(t *testing.T) {
	other := errors.New("layer: unavailable")
	cause := New(other, "Neutron answered 404")
	err := fmt.Errorf("delete the cluster: %w", Wrap(errKind, cause, "could not list floating IPs: %v", Reason(cause)))
	if got, want := Reason(err), "delete the cluster: could not list floating IPs: Neutron answered 404"; got != want {
		t.Errorf("Reason = %q, want %q", got, want)
	}
	if !errors.Is(err, errKind) || !errors.Is(err, other) {
		t.Errorf("%v is not both its kind and its cause's", err)
	}
	if got := Reason(errors.New("plain")); got != "plain" {
		t.Errorf("Reason of an error without a kind = %q", got)
	}
}

// TestTextIsTheMatchingKinds: an error of one kind raised while handling
// another shows the text of the kind being answered.
func TestTextIsTheMatchingKinds(t *testing.T) {
	other := errors.New("layer: unavailable")
	err := fmt.Errorf("%w; %w", New(other, "the backend is down"), New(errKind, "host h1 is unknown"))
	if got := Text(err, errKind); got != "host h1 is unknown" {
		t.Errorf("Text(err, errKind) = %q", got)
	}
	if got := Text(err, other); got != "the backend is down" {
		t.Errorf("Text(err, other) = %q", got)
	}
}
