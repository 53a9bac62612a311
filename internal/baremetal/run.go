package baremetal

import (
	"context"
	"log/slog"
	"time"
)

// Run reconciles the backend's hosts every interval until ctx ends. It is
// the owner of the periodic pass; API calls also step the host they change.
func Run(ctx context.Context, b Backend, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := b.Reconcile(ctx); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "bare-metal reconcile pass failed", "backend", b.Name(), "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
