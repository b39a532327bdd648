package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/engine/internal/errs"
)

// Bootstrap is what the engine needs from the communicator's bootstrap
// network (internal/bootstrap.Net, or MPI through mpiboot).
type Bootstrap interface {
	AllGather(ctx context.Context, b []byte) ([][]byte, error)
	Barrier(ctx context.Context) error
	Send(ctx context.Context, peer, tag int, b []byte) error
	Recv(ctx context.Context, peer, tag int) ([]byte, error)
	Close() error
	Abort() error
}

// Config describes one rank's engine. Rank, NRanks, Boot, Device and
// Backend are required; the rest have defaults.
type Config struct {
	Rank, NRanks int
	Boot         Bootstrap
	Device       device.Device
	Timeout      time.Duration // every wait; 0 = 5 minutes
	Log          *slog.Logger  // nil = slog.Default()
	// ID identifies the communicator: the same on every rank, different
	// between communicators (comm hashes its unique IDs' rendezvous
	// keys). A group submits its engines' launches in ID order
	// (LaunchGroup); 0 leaves them in the group's order.
	ID uint64
	// Backend makes the backend that runs the ops (package choose picks
	// one for the device and the peers).
	Backend NewBackend
}

// Engine is one rank's engine for one communicator.
type Engine struct {
	rank, nranks int
	id           uint64 // Config.ID
	dev          device.Device
	timeout      time.Duration
	backend      Backend
	reporter     Reporter // backend as a Reporter; nil when it is none

	ctx    context.Context // cancelled by Abort and Close
	cancel context.CancelFunc

	order    ticketLock
	launches sync.Pool // *Launch, reused once Done
	redops   redopTable
	checkPtr func(arg string, p uintptr, n int) error // nil: GCCL_CHECK_POINTERS off
	asyncErr atomic.Pointer[error]
	aborted  atomic.Pointer[abortRecord] // the first AbortWith
	closed   atomic.Bool
}

// abortRecord is when the engine was first aborted, and the cause when it
// became the async error (nil when an earlier failure had).
type abortRecord struct {
	at    time.Time
	cause *error
}

// New builds the engine and its backend (collective over the ranks: the
// backend may exchange over the bootstrap).
func New(cfg Config) (*Engine, error) {
	switch {
	case cfg.NRanks < 1:
		return nil, gccl.Errorf(gccl.InvalidArgument, "nranks", "nranks %d < 1", cfg.NRanks)
	case cfg.Rank < 0 || cfg.Rank >= cfg.NRanks:
		return nil, gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d out of range [0,%d)", cfg.Rank, cfg.NRanks)
	case cfg.Boot == nil:
		return nil, gccl.Errorf(gccl.InvalidArgument, "boot", "engine.Config.Boot is nil; pass the communicator's bootstrap")
	case cfg.Device == nil:
		return nil, gccl.Errorf(gccl.InvalidArgument, "device", "engine.Config.Device is nil; pass device.Open's result")
	case cfg.Backend == nil:
		return nil, gccl.Errorf(gccl.InvalidArgument, "backend", "engine.Config.Backend is nil; pass choose.Backend's result")
	}
	e := &Engine{rank: cfg.Rank, nranks: cfg.NRanks, dev: cfg.Device, timeout: cfg.Timeout, redops: newRedopTable(),
		checkPtr: newPointerCheck(cfg.Device)}
	if e.timeout <= 0 {
		e.timeout = 5 * time.Minute
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	e.id = cfg.ID
	e.launches.New = func() any { return &Launch{e: e} }
	e.ctx, e.cancel = context.WithCancel(context.Background())
	ctx, cancel := e.waitCtx(context.Background())
	defer cancel()
	b, err := cfg.Backend(ctx, Setup{Rank: e.rank, NRanks: e.nranks, Boot: cfg.Boot, Device: e.dev, Timeout: e.timeout, Log: log})
	if err != nil {
		e.closed.Store(true)
		e.cancel()
		return nil, err
	}
	e.backend = b
	e.reporter, _ = b.(Reporter)
	return e, nil
}

// Rank and NRanks describe the communicator.
func (e *Engine) Rank() int   { return e.rank }
func (e *Engine) NRanks() int { return e.nranks }

// Device is the engine's device.
func (e *Engine) Device() device.Device { return e.dev }

// waitCtx bounds a wait by the engine's timeout and by Abort.
func (e *Engine) waitCtx(parent context.Context) (context.Context, context.CancelFunc) {
	if e.ctx != nil && parent == context.Background() {
		// e.ctx is the only other bound: derive from it (no AfterFunc).
		return context.WithTimeout(e.ctx, e.timeout)
	}
	ctx, cancel := context.WithTimeout(parent, e.timeout)
	if e.ctx == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(e.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// AsyncError returns the first error of an operation that failed after
// being launched, or nil.
func (e *Engine) AsyncError() error {
	if p := e.asyncErr.Load(); p != nil {
		return *p
	}
	if r := e.reporter; r != nil {
		// A kernel that gave up left its stream done and its outputs unwritten.
		if err := r.Status(); err != nil {
			e.setAsyncError(err)
			return err
		}
	}
	return nil
}

func (e *Engine) setAsyncError(err error) {
	e.asyncErr.CompareAndSwap(nil, &err)
}

// Closed reports whether Close or Abort was called.
func (e *Engine) Closed() bool { return e.closed.Load() }

// Drain waits until every operation launched so far has finished (or ctx
// ends, or the engine is aborted) and returns the engine's async error.
// Finalize calls it before synchronising with the other ranks.
func (e *Engine) Drain(ctx context.Context) error {
	if e == nil {
		return nil
	}
	ctx, cancel := e.waitCtx(ctx)
	defer cancel()
	if err := e.order.drain(ctx); err != nil {
		return errs.First(e.AsyncError(), err)
	}
	return e.AsyncError()
}

// Quiesce has a Quiescer backend finish its work with peers and stop
// watching them (nil for other backends): Finalize calls it after Drain,
// before its barrier.
func (e *Engine) Quiesce(ctx context.Context) error {
	if e == nil {
		return nil
	}
	q, ok := e.backend.(Quiescer)
	if !ok {
		return nil
	}
	ctx, cancel := e.waitCtx(ctx)
	defer cancel()
	return q.Quiesce(ctx)
}

// Close waits (up to the timeout) for launched operations to finish, then
// closes the backend. Safe on nil and twice.
func (e *Engine) Close() error {
	if e == nil || e.closed.Swap(true) {
		return nil
	}
	ctx, cancel := e.waitCtx(context.Background())
	err := e.order.drain(ctx)
	cancel()
	e.cancel()
	return errs.First(err, e.backend.Close(false))
}

// Abort cancels everything in flight at once and closes the backend;
// operations still queued fail with gccl.ErrRemote. Safe on nil and twice.
func (e *Engine) Abort() error {
	return e.AbortWith(gccl.Errorf(gccl.RemoteError, "comm", "communicator aborted"))
}

// AbortWith is Abort with the reason that operations in flight and the
// async error report (a lost peer, say), unless an earlier failure is
// already recorded.
func (e *Engine) AbortWith(cause error) error {
	if e == nil {
		return nil
	}
	a := &abortRecord{at: time.Now()}
	if p := &cause; e.asyncErr.CompareAndSwap(nil, p) {
		a.cause = p
	}
	e.aborted.CompareAndSwap(nil, a)
	e.closed.Store(true)
	e.cancel()
	return e.backend.Close(true)
}

// abortCause replaces the error of an operation cut short by Abort (a
// closed connection, a cancelled wait) with the reason for the abort.
//
// An operation whose deadline (deadline, zero if unknown) had passed
// before the abort was not cut short: its timeout stays, and takes the
// abort's cause's place as the async error, being the earlier failure.
// This is the common case of a stall: the host backend spends a moment
// after the deadline naming the rank that stalled, and a peer that timed
// out on the same stall and aborted meanwhile reaches this rank as a lost
// peer (AbortWith), which must not hide the stalled rank.
func (e *Engine) abortCause(err error, deadline time.Time) error {
	if err == nil || e.ctx.Err() == nil {
		return err
	}
	if a := e.aborted.Load(); a != nil && gccl.Code(err) == gccl.TimeoutError && !deadline.IsZero() && deadline.Before(a.at) {
		timeout := err // its own variable: only this branch puts it on the heap
		e.asyncErr.CompareAndSwap(a.cause, &timeout)
		return err
	}
	return errs.First(e.AsyncError(), err)
}
