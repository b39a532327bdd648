package host

import (
	"slices"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/hoststream"
	"github.com/gccl/gccl/internal/progress"
)

// part is one engine's launch within a task.
type part struct {
	b *Backend
	l *engine.Launch
}

// task is what the host backend enqueues for one launch or group: the
// launches of every engine that share a stream, run concurrently by one
// task on the first stream, which the task's other streams are joined to.
// Run one after the other, two communicators' launches on one stream could
// each wait for the other's peers, which another rank ordered differently;
// only the order of one communicator's operations must match across ranks
// (its turns keep it), as NCCL treats a group as one call.
type task struct {
	parts   []part
	streams []*hoststream.Stream // the first runs the task
}

// Submit enqueues one task on the launch's host stream, joined to its other
// streams. The task waits for the launch's turn, runs the ops, and ends the
// launch, a failure becoming the engine's async error (the stream's
// Synchronize returns it too).
func (b *Backend) Submit(l *engine.Launch) error {
	tasks, err := tasksOf([]part{{b, l}})
	if err != nil {
		return err
	}
	return tasks[0].enqueue()
}

// Joins reports whether o is a host backend too: their launches in one
// group are joined into tasks.
func (b *Backend) Joins(o engine.Backend) bool {
	_, ok := o.(*Backend)
	return ok
}

// Join groups launches into tasks: launches that share a stream, directly
// or through other launches, land in one task. Every stream is looked up
// first, so an unknown or closed one launches nothing.
func (b *Backend) Join(ls []*engine.Launch) ([]engine.Batch, error) {
	parts := make([]part, len(ls))
	for i, l := range ls {
		parts[i] = part{l.Backend().(*Backend), l}
	}
	tasks, err := tasksOf(parts)
	if err != nil {
		return nil, err
	}
	batches := make([]engine.Batch, len(tasks))
	for i, t := range tasks {
		batches[i].Submit = t.enqueue
		for _, p := range t.parts {
			batches[i].Launches = append(batches[i].Launches, p.l)
		}
	}
	return batches, nil
}

// tasksOf groups parts into tasks: parts that share a stream, directly or
// through other parts, land in one task.
func tasksOf(parts []part) ([]*task, error) {
	var tasks []*task
	for _, p := range parts {
		ss, err := p.streams()
		if err != nil {
			return nil, err
		}
		var into *task
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
			into = &task{}
			tasks = append(tasks, into)
		}
		into.parts = append(into.parts, p)
		into.add(ss)
	}
	return tasks, nil
}

// streams looks up the part's streams on its backend's device; a closed
// stream is an error.
func (p part) streams() ([]*hoststream.Stream, error) {
	ss := make([]*hoststream.Stream, 0, 1+len(p.l.More))
	for _, h := range append([]gccl.Stream{p.l.Stream}, p.l.More...) {
		s, err := hoststream.Lookup(p.b.dev.Ordinal(), h)
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

func (t *task) shares(ss []*hoststream.Stream) bool {
	for _, s := range ss {
		if slices.Contains(t.streams, s) {
			return true
		}
	}
	return false
}

func (t *task) add(ss []*hoststream.Stream) {
	for _, s := range ss {
		if !slices.Contains(t.streams, s) {
			t.streams = append(t.streams, s)
		}
	}
}

// enqueue joins the task's streams around one task on the first: it starts
// when every stream has run what was enqueued before it, and work enqueued
// later on any of them waits for it (a failure spreads to all of them).
// Once the task is enqueued it owns the launches and enqueue returns nil;
// a stream destroyed meanwhile fails its own later work.
func (t *task) enqueue() error {
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
func (t *task) run() error {
	defer progress.Enter(false)() // MPI beside gccl progresses while the task waits on peers
	if len(t.parts) == 1 {
		return t.parts[0].run()
	}
	errList := make([]error, len(t.parts))
	var wg sync.WaitGroup
	for i, p := range t.parts {
		wg.Go(func() { errList[i] = p.run() })
	}
	wg.Wait()
	return errs.First(errList...)
}

// run waits for the launch's turn in its engine's issue order, runs its
// ops, and ends the launch (a failure becomes the engine's async error).
func (p part) run() error {
	ctx := p.l.Context()
	err := p.l.WaitTurn(ctx)
	if err == nil {
		err = p.b.Run(ctx, p.l.Ops)
	}
	return p.l.Done(err)
}
