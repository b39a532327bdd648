package engine

import (
	"context"
	"sync"

	"github.com/gccl/gccl"
)

// ticketLock runs launches in issue order: Launch takes a ticket, the task
// waits for its turn on whatever stream it runs, and releases it when done.
// Every rank issues a communicator's operations in the same order (NCCL's
// rule), so every rank runs them in the same order even when they are spread
// over several streams.
type ticketLock struct {
	mu      sync.Mutex
	next    uint64        // the next ticket to hand out
	serving uint64        // the ticket allowed to run
	changed chan struct{} // closed when serving moves
}

func (t *ticketLock) take() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	return t.next - 1
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
		if t.serving == ticket {
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
			return ctxErr(ctx, "waiting for the communicator's earlier operations")
		}
	}
}

// release lets the next ticket run.
func (t *ticketLock) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.serving++
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// drain waits until every ticket handed out has been released.
func (t *ticketLock) drain(ctx context.Context) error {
	for {
		t.mu.Lock()
		if t.serving == t.next {
			t.mu.Unlock()
			return nil
		}
		ch := t.signal()
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctxErr(ctx, "waiting for launched operations to finish")
		}
	}
}

// ctxErr turns an ended context into ErrTimeout (deadline) or ErrRemote
// (cancelled by Abort).
func ctxErr(ctx context.Context, doing string) error {
	if ctx.Err() == context.DeadlineExceeded {
		return gccl.Errorf(gccl.TimeoutError, "timeout", "%s: deadline expired; raise GCCL_TIMEOUT or Config.Timeout if the peers are slow", doing)
	}
	return gccl.Errorf(gccl.RemoteError, "comm", "%s: communicator aborted", doing)
}
