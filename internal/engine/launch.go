package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/wait"
)

// Launch is one engine's share of one Launch call or group, as the core
// hands it to the backend: the ops in the order they run, the streams they
// use, and the launch's place in the engine's issue order, with the calls
// that wait for its turn and end it. The core owns it again after Done
// (it is reused), and the backend must not touch it then.
type Launch struct {
	// Ops are the collectives in issue order, then the point-to-point ops
	// (which run concurrently). Each captured its operator (Op.Scalar).
	Ops []Op
	// Stream is the first op's stream; More the ops' other streams, each
	// once, which the backend joins: the launch starts once every one of
	// them ran what was enqueued before it, and later work on any of them
	// waits for it.
	Stream gccl.Stream
	More   []gccl.Stream

	e        *Engine
	ticket   uint64
	deadline time.Time        // of Context; zero until it is called
	scope    wait.Scope       // Context's, released by Done
	inline   [launchInline]Op // ops' storage for small launches (one allocation)
	large    []Op             // ops' storage for larger ones, kept for the next
}

// launchInline is how many ops a launch holds without a second allocation;
// a larger launch (a 2-D halo exchange has 8) allocates its storage once
// and keeps it in the pool for the next.
const launchInline = 4

// Backend is the backend of the launch's engine (a Joiner tells its own
// launches from others' with it).
func (l *Launch) Backend() Backend { return l.e.backend }

// Context is the bound of every wait of the launch's operations: the
// engine's timeout (Config.Timeout) from this call, and Abort. It is the
// launch's own wait.Scope, so it costs no allocation and no timer unless
// a wait selects on its Done channel. It is valid until Done; a wait that
// outlives Done takes ContextAfterDone's. The launch remembers its
// deadline (Done compares it with an abort's time).
func (l *Launch) Context() context.Context {
	l.deadline = time.Now().Add(l.e.timeout)
	l.scope.Reset(l.e.ctx, l.deadline)
	return &l.scope
}

// ContextAfterDone has Context's deadline (Context must have been called)
// and ends at Abort, as Context, but stays valid after Done: for a
// backend's waits that outlive the launch's turn. Call cancel when done.
func (l *Launch) ContextAfterDone() (context.Context, context.CancelFunc) {
	return context.WithDeadline(l.e.ctx, l.deadline)
}

// Ready reports, without waiting, whether the launch's turn has come
// (WaitTurn would return at once).
func (l *Launch) Ready() bool { return l.e.order.ready(l.ticket) }

// WaitTurn waits until the engine's earlier launches are done, so that
// every rank runs a communicator's operations in the same order whatever
// streams they use. It returns at once, allocating nothing, when the turn
// has come; otherwise it waits at most until ctx, the engine's timeout or
// Abort ends it or the engine has an async error, and returns that error.
func (l *Launch) WaitTurn(ctx context.Context) error {
	e := l.e
	if e.order.ready(l.ticket) {
		return nil
	}
	ctx, cancel := e.waitCtx(ctx)
	defer cancel()
	return e.order.wait(ctx, l.ticket, e.AsyncError)
}

// Fail records err (when not nil) as the engine's async error, unless an
// earlier failure is recorded: AsyncError reports it and later launches
// fail at once.
func (l *Launch) Fail(err error) {
	if err != nil {
		l.e.setAsyncError(err)
	}
}

// Done ends the launch: err, replaced by the abort's cause when Abort cut
// the launch short (not a timeout whose deadline passed before), becomes the engine's async error (Fail), and the next
// launch may run. It returns the error to report (to the stream). The
// backend must not touch l afterwards.
func (l *Launch) Done(err error) error {
	e := l.e
	err = e.abortCause(err, l.deadline)
	l.Fail(err)
	if !l.deadline.IsZero() { // Context was called: a wait may have armed the scope's timer
		l.scope.Release()
	}
	e.order.release()
	e.recycle(l)
	return err
}

// newLaunch returns an empty launch of e for ops on stream s.
func (e *Engine) newLaunch(s gccl.Stream, nops int) *Launch {
	l := e.launches.Get().(*Launch)
	l.Stream, l.ticket, l.deadline = s, 0, time.Time{}
	l.Ops, l.More = l.inline[:0], l.More[:0]
	if nops > launchInline {
		if cap(l.large) < nops {
			l.large = make([]Op, 0, nops)
		}
		l.Ops = l.large[:0]
	}
	return l
}

// recycle keeps l for a later launch of e: the backend ended it (Done) or
// never took it.
func (e *Engine) recycle(l *Launch) {
	if l == nil {
		return
	}
	l.Ops = nil
	e.launches.Put(l)
}

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
