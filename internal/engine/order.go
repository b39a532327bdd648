package engine

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl/internal/engine/internal/errs"
)

// ticketLock runs launches in issue order: Launch takes a ticket, the task
// waits for its turn on whatever stream it runs, and releases it when done.
// Every rank issues a communicator's operations in the same order (NCCL's
// rule), so every rank runs them in the same order even when they are spread
// over several streams.
type ticketLock struct {
	mu      sync.Mutex
	next    atomic.Uint64 // the next ticket to hand out
	serving atomic.Uint64 // the ticket allowed to run; moves under mu
	changed chan struct{} // closed when serving moves; under mu
}

func (t *ticketLock) take() uint64 {
	return t.next.Add(1) - 1
}

// ready reports, without blocking or locking, whether ticket may run now.
// Once true it stays true until the holder calls release.
func (t *ticketLock) ready(ticket uint64) bool {
	return t.serving.Load() == ticket
}

func (t *ticketLock) signal() chan struct{} {
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

// wait blocks until ticket may run, ctx ends, or broken returns an error.
func (t *ticketLock) wait(ctx context.Context, ticket uint64, broken func() error) error {
	for {
		t.mu.Lock()
		if t.serving.Load() == ticket {
			t.mu.Unlock()
			return nil
		}
		ch := t.signal()
		t.mu.Unlock()
		if err := broken(); err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return errs.Ctx(ctx, "waiting for the communicator's earlier operations")
		}
	}
}

// release lets the next ticket run.
func (t *ticketLock) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.serving.Add(1)
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// drain waits until every ticket handed out has been released.
func (t *ticketLock) drain(ctx context.Context) error {
	for {
		t.mu.Lock()
		if t.serving.Load() == t.next.Load() {
			t.mu.Unlock()
			return nil
		}
		ch := t.signal()
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return errs.Ctx(ctx, "waiting for launched operations to finish")
		}
	}
}
