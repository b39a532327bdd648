package host

import (
	"context"
	"slices"
	"sync"
	"time"

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
	pool    *sync.Pool           // where Run returns it (a backend's tasks)

	// A task that Start began (its sends done): Run finishes it.
	started bool
	ctx     context.Context // the launch's (Launch.Context)
	began   time.Time
}

// Submit enqueues one task on the launch's host stream, joined to its other
// streams. The task waits for the launch's turn, runs the ops, and ends the
// launch, a failure becoming the engine's async error (the stream's
// Synchronize returns it too). A task of one stream comes from the
// backend's pool and returns there once run, so launching allocates
// nothing.
func (b *Backend) Submit(l *engine.Launch) error {
	t := b.tasks.Get().(*task)
	t.pool = &b.tasks
	if err := t.join(part{b, l}); err != nil {
		t.recycle()
		return err
	}
	if err := t.enqueue(); err != nil {
		t.recycle()
		return err
	}
	return nil
}

// recycle returns t to its pool, if it has one.
func (t *task) recycle() {
	clear(t.parts)
	clear(t.streams)
	t.parts, t.streams = t.parts[:0], t.streams[:0]
	t.started, t.ctx = false, nil
	if p := t.pool; p != nil {
		t.pool = nil
		p.Put(t)
	}
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
		one := &task{}
		if err := one.join(p); err != nil {
			return nil, err
		}
		var into *task
		keep := tasks[:0]
		for _, t := range tasks {
			switch {
			case !t.shares(one.streams):
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
			tasks = append(tasks, one)
			continue
		}
		into.parts = append(into.parts, p)
		into.add(one.streams)
	}
	return tasks, nil
}

// join adds p and its streams, looked up on its backend's device, to t;
// a closed stream is an error.
func (t *task) join(p part) error {
	for i := -1; i < len(p.l.More); i++ {
		h := p.l.Stream
		if i >= 0 {
			h = p.l.More[i]
		}
		s, err := hoststream.Lookup(p.b.dev.Ordinal(), h)
		if err != nil {
			return err
		}
		if s.Closed() {
			return gccl.Errorf(gccl.InvalidUsage, "stream", "host stream %#x is closed; use a stream that was not destroyed", uintptr(h))
		}
		if !slices.Contains(t.streams, s) {
			t.streams = append(t.streams, s)
		}
	}
	t.parts = append(t.parts, p)
	return nil
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
	if len(others) > 0 {
		t.pool = nil // enqueue reads t.streams after the task may have run
	}
	if err := run.EnqueueTask(t); err != nil {
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

// Start begins a task of one launch on the goroutine that enqueues it
// onto an idle stream (hoststream.Starter): once the launch's turn has
// come, a launch whose sends all fit their connections' buffers and come
// before anything else it does (small Send/Recv launches, the direct
// collectives: start.go) sends, none waiting. It is then Finished if that
// was all, else Started: its receives are left to Run, which a
// Synchronize on this goroutine usually calls, so that a launch and its
// synchronisation hand nothing to another goroutine. Any other task is
// NotStarted.
func (t *task) Start() (hoststream.Progress, error) {
	if len(t.parts) != 1 || !t.parts[0].ready() {
		return hoststream.NotStarted, nil
	}
	p := t.parts[0]
	ctx, began := p.l.Context(), time.Now()
	if !p.b.start(ctx, p.l.Ops) {
		return hoststream.NotStarted, nil
	}
	if p.b.waiting() {
		t.started, t.ctx, t.began = true, ctx, began
		p.b.held.Store(t.streams[0])
		return hoststream.Started, nil
	}
	defer t.recycle()
	return hoststream.Finished, p.finish(ctx, began)
}

// Run runs the task's launches concurrently and returns the first error
// (hoststream.Task), then returns t to its pool. A task that Start began
// finishes its launch.
func (t *task) Run() error {
	progress.Begin(false) // MPI beside gccl progresses while the task waits on peers
	defer progress.End(false)
	defer t.recycle()
	if t.started {
		return t.parts[0].finish(t.ctx, t.began)
	}
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
	p.ready() // an earlier launch held for a Synchronize goes on meanwhile
	err := p.l.WaitTurn(ctx)
	if err == nil {
		err = p.b.Run(ctx, p.l.Ops)
	}
	return p.l.Done(err)
}

// finish runs what Backend.start left of the launch, begun at began, and
// ends it as run does.
func (p part) finish(ctx context.Context, began time.Time) error {
	p.b.held.Store(nil)
	return p.l.Done(p.b.ran(ctx, began, p.b.finish(p.l.Ops)))
}

// ready reports whether the launch's turn has come; if not, it releases
// the backend's launch that a stream holds for a Synchronize, if any
// (hoststream.Started): that launch may be the one this one waits for.
func (p part) ready() bool {
	if p.l.Ready() {
		return true
	}
	if s := p.b.held.Load(); s != nil {
		s.Release()
	}
	return false
}
