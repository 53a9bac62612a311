package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// New builds a logger writing format ("text" or "json") at level ("debug",
// "info", "warn" or "error") to w. Lines logged with a context that carries
// a request id get a request_id attribute.
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("config: [log] level = %q must be debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch strings.ToLower(format) {
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("config: [log] format = %q must be text or json", format)
	}
	return slog.New(AddRequestID(h)), nil
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id rid.
func WithRequestID(ctx context.Context, rid string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, rid)
}

// RequestID is the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	rid, _ := ctx.Value(requestIDKey{}).(string)
	return rid
}

// AddRequestID wraps h so that records logged with a context carrying a
// request id get it as request_id. Wrapping twice is harmless.
func AddRequestID(h slog.Handler) slog.Handler {
	if _, ok := h.(requestIDHandler); ok {
		return h
	}
	return requestIDHandler{h}
}

// Contextual returns l with request ids added (l itself when it already
// adds them).
func Contextual(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(requestIDHandler); ok {
		return l
	}
	return slog.New(AddRequestID(l.Handler()))
}

type requestIDHandler struct{ inner slog.Handler }

func (h requestIDHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if rid := RequestID(ctx); rid != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", rid))
	}
	return h.inner.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.inner.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.inner.WithGroup(name)}
}
