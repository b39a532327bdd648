package engine

import (
	"context"
	"slices"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/hoststream"
	"github.com/gccl/gccl/internal/progress"
)

// hostPart is one engine's launch within a host task.
type hostPart struct {
	e *Engine
	l *launch
}

// hostTask is what the host backend enqueues for one launch or group: the
// launches of every engine that share a stream, run concurrently by one
// task on the first stream, which the task's other streams are joined to.
// Run one after the other, two communicators' launches on one stream could
// each wait for the other's peers, which another rank ordered differently;
// only the order of one communicator's operations must match across ranks
// (its tickets keep it), as NCCL treats a group as one call.
type hostTask struct {
	parts   []hostPart
	streams []*hoststream.Stream // the first runs the task
}

func isHost(e *Engine) bool {
	_, ok := e.backend.(HostBackend)
	return ok
}

// submitHost gives every launch its engine's next ticket and enqueues the
// launches, grouped into tasks by the streams they share. Every stream is
// looked up first, so an unknown or closed one launches nothing.
func submitHost(parts []hostPart) error {
	tasks, err := hostTasks(parts)
	if err != nil {
		for _, p := range parts {
			p.e.recycle(p.l, false)
		}
		return err
	}
	for _, t := range tasks {
		for _, p := range t.parts {
			p.l.ticket = p.e.order.take()
		}
		if err := t.enqueue(); err != nil {
			for _, p := range t.parts {
				p.e.order.release() // keep later tickets moving
			}
			return err
		}
	}
	return nil
}

// hostTasks groups parts into tasks: parts that share a stream, directly or
// through other parts, land in one task.
func hostTasks(parts []hostPart) ([]*hostTask, error) {
	var tasks []*hostTask
	for _, p := range parts {
		ss, err := p.streams()
		if err != nil {
			return nil, err
		}
		var into *hostTask
		keep := tasks[:0]
		for _, t := range tasks {
			switch {
			case !t.shares(ss):
				keep = append(keep, t)
			case into == nil:
				into = t
				keep = append(keep, t)
			default: // p joins two tasks
				into.parts = append(into.parts, t.parts...)
				into.add(t.streams)
			}
		}
		tasks = keep
		if into == nil {
			into = &hostTask{}
			tasks = append(tasks, into)
		}
		into.parts = append(into.parts, p)
		into.add(ss)
	}
	return tasks, nil
}

// streams looks up the part's streams on its engine's device; a closed
// stream is an error.
func (p hostPart) streams() ([]*hoststream.Stream, error) {
	ss := make([]*hoststream.Stream, 0, 1+len(p.l.more))
	for _, h := range append([]gccl.Stream{p.l.stream}, p.l.more...) {
		s, err := hoststream.Lookup(p.e.dev.Ordinal(), h)
		if err != nil {
			return nil, err
		}
		if s.Closed() {
			return nil, gccl.Errorf(gccl.InvalidUsage, "stream", "host stream %#x is closed; use a stream that was not destroyed", uintptr(h))
		}
		ss = append(ss, s)
	}
	return ss, nil
}

func (t *hostTask) shares(ss []*hoststream.Stream) bool {
	for _, s := range ss {
		if slices.Contains(t.streams, s) {
			return true
		}
	}
	return false
}

func (t *hostTask) add(ss []*hoststream.Stream) {
	for _, s := range ss {
		if !slices.Contains(t.streams, s) {
			t.streams = append(t.streams, s)
		}
	}
}

// enqueue joins the task's streams around one task on the first: it starts
// when every stream has run what was enqueued before it, and work enqueued
// later on any of them waits for it (a failure spreads to all of them).
// Once the task is enqueued it owns the tickets and enqueue returns nil;
// a stream destroyed meanwhile fails its own later work.
func (t *hostTask) enqueue() error {
	run, others := t.streams[0], t.streams[1:]
	for _, s := range others {
		if err := run.WaitEvent(s.RecordEvent()); err != nil {
			return err
		}
	}
	if err := run.Enqueue(t.run); err != nil {
		return err
	}
	if len(others) > 0 {
		done := run.RecordEvent()
		for _, s := range others {
			_ = s.WaitEvent(done) // fails only on a stream closed since the lookup
		}
	}
	return nil
}

// run runs the task's launches concurrently and returns the first error.
func (t *hostTask) run() error {
	defer progress.Enter(false)() // MPI beside gccl progresses while the task waits on peers
	if len(t.parts) == 1 {
		return t.parts[0].run()
	}
	errs := make([]error, len(t.parts))
	var wg sync.WaitGroup
	for i, p := range t.parts {
		wg.Go(func() { errs[i] = p.run() })
	}
	wg.Wait()
	return firstErr(errs...)
}

// run waits for the launch's turn in its engine's issue order, runs its
// ops, and records a failure as the engine's async error.
func (p hostPart) run() error {
	e := p.e
	defer e.order.release()
	ctx, cancel := e.waitCtx(context.Background())
	defer cancel()
	err := e.order.wait(ctx, p.l.ticket, e.AsyncError)
	if err == nil {
		err = e.runHost(ctx, p.l.ops)
	}
	err = e.abortCause(err)
	if err != nil {
		e.setAsyncError(err)
	}
	return err
}
