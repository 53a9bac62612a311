package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/magnetite-io/magnetite/internal/logging"
)

func TestJSONFormatWritesOneObjectPerLineWithRequestID(t *testing.T) {
	var buf bytes.Buffer
	log, err := logging.New(&buf, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	ctx := logging.WithRequestID(context.Background(), "req-123")
	log.InfoContext(ctx, "cluster created", "cluster", "c1")
	log.With("component", "conductor").WarnContext(ctx, "retrying")
	log.Info("no request here")
	log.Debug("below the level")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), buf.String())
	}
	want := []map[string]any{
		{"msg": "cluster created", "request_id": "req-123", "cluster": "c1", "level": "INFO"},
		{"msg": "retrying", "request_id": "req-123", "component": "conductor", "level": "WARN"},
		{"msg": "no request here", "level": "INFO"},
	}
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, line)
		}
		for k, v := range want[i] {
			if rec[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%s)", i, k, rec[k], v, line)
			}
		}
		if _, has := rec["request_id"]; has != (want[i]["request_id"] != nil) {
			t.Errorf("line %d: request_id present = %v: %s", i, has, line)
		}
	}
}

func TestTextFormatCarriesRequestIDOnce(t *testing.T) {
	var buf bytes.Buffer
	log, err := logging.New(&buf, "text", "debug")
	if err != nil {
		t.Fatal(err)
	}
	// Wrapping an already wrapping logger must not add the id twice.
	log = logging.Contextual(log)
	log.DebugContext(logging.WithRequestID(context.Background(), "req-9"), "hello")
	if got := strings.Count(buf.String(), "request_id=req-9"); got != 1 {
		t.Fatalf("request_id appears %d times: %s", got, buf.String())
	}
}

func TestUnknownFormatOrLevelIsRefusedWithTheFix(t *testing.T) {
	if _, err := logging.New(&bytes.Buffer{}, "yaml", "info"); err == nil || !strings.Contains(err.Error(), "text or json") {
		t.Fatalf("format yaml: err = %v, want one naming text or json", err)
	}
	if _, err := logging.New(&bytes.Buffer{}, "json", "loud"); err == nil || !strings.Contains(err.Error(), "debug, info, warn or error") {
		t.Fatalf("level loud: err = %v, want one naming the levels", err)
	}
}
