package hoststream

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/futex"
)

// DefaultTimeout bounds the cross-stream waits of WaitEvent on streams made
// by New. Use NewWithTimeout for another bound.
const DefaultTimeout = 5 * time.Minute

// Task is work that a stream runs (Stream.EnqueueTask): a value the
// caller keeps, so that enqueueing it allocates nothing, where a func
// value bound to it would be allocated on every call.
type Task interface{ Run() error }

// funcTask is a func() error as a Task.
type funcTask func() error

func (f funcTask) Run() error { return f() }

// task is one queue entry: work to run, or an event to complete, or both.
type task struct {
	run Task
	ev  *Event
}

// Stream is an ordered host work queue. The zero value is not usable; make
// streams with New. All methods are safe for concurrent use.
type Stream struct {
	timeout time.Duration

	mu       sync.Mutex
	queue    []task // queue[head:] waits, its first entry maybe running; the storage is reused
	head     int
	busy     bool          // a goroutine runs queue[head]: the worker, a Synchronize or a starting enqueuer (help.go)
	held     bool          // queue[head] was started and is held for a Synchronize to finish (help.go)
	holds    uint64        // how many tasks were held
	watch    bool          // the worker parks watchEvery, not parkIdle: tasks are being held
	running  bool          // a worker goroutine exists
	parked   bool          // the worker waits on wake for work (awaitWork)
	wake     chan struct{} // cap 1: push or Close tells a parked worker
	kicks    atomic.Uint64 // counts the worker's wake-ups (wakeWorker), which its spin polls
	idle     *time.Timer   // the parked worker's bound (the worker's own)
	err      error         // sticky: the first failure
	errAt    uint64        // the number of the task that failed (finished counts them)
	closed   bool
	enqueued atomic.Uint64 // written under mu
	finished atomic.Uint64 // written under mu
	// Sleeping Synchronize calls: each has a channel of capacity 1 that
	// the worker signals when a task finishes. Channels and the timer are
	// reused, so that synchronising allocates nothing. Under mu.
	sleepers []chan struct{}
	spare    []chan struct{}
	timer    *time.Timer // nil while a Synchronize uses it
}

// New returns an empty stream whose cross-stream waits are bounded by
// DefaultTimeout.
func New() *Stream { return NewWithTimeout(DefaultTimeout) }

// NewWithTimeout returns an empty stream whose cross-stream waits (WaitEvent)
// fail with gccl.ErrTimeout after d. A d <= 0 means DefaultTimeout.
func NewWithTimeout(d time.Duration) *Stream {
	if d <= 0 {
		d = DefaultTimeout
	}
	return &Stream{timeout: d, wake: make(chan struct{}, 1)}
}

// Enqueue appends f to the stream. Tasks run one at a time in the order they
// were enqueued. Once a task has failed, later tasks are skipped. Enqueue
// never blocks; it fails only for a nil f or a closed stream.
func (s *Stream) Enqueue(f func() error) error {
	if f == nil {
		return gccl.Errorf(gccl.InvalidArgument, "task", "nil task; pass a function to run on the stream")
	}
	return s.push(task{run: funcTask(f)})
}

// EnqueueTask is Enqueue of t.Run. A Starter onto an idle stream starts
// on the calling goroutine (help.go).
func (s *Stream) EnqueueTask(t Task) error {
	if t == nil {
		return gccl.Errorf(gccl.InvalidArgument, "task", "nil task; pass a task to run on the stream")
	}
	if st, ok := t.(Starter); ok {
		return s.start(st)
	}
	return s.push(task{run: t})
}

func (s *Stream) push(t task) error {
	if s == nil {
		return gccl.Errorf(gccl.InvalidArgument, "stream", "nil host stream")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return gccl.Errorf(gccl.InvalidUsage, "stream", "the stream is closed; create a new stream")
	}
	s.queue = append(s.queue, t)
	s.enqueued.Add(1)
	s.wakeWorker()
	return nil
}

// wakeWorker has the worker run the queue, starting it or waking it from
// its park, and gives it a held task: work enqueued after one must not
// wait for a Synchronize (s.mu held).
func (s *Stream) wakeWorker() {
	s.held = false
	s.kicks.Add(1)
	switch {
	case !s.running:
		s.running = true
		go s.work()
	case s.parked:
		s.unpark()
	}
}

// unpark wakes the parked worker (s.mu held).
func (s *Stream) unpark() {
	s.parked = false
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// work drains the queue. Between tasks it waits for the next: where host
// streams spin (package futex: StreamSpinTime, none where ranks are more
// than half the CPUs) it first polls that long, then parks for up to
// parkIdle, and exits only then (or once the stream is closed), so that an
// idle stream holds no goroutine while a caller launching one operation
// after another hands each to a running goroutine instead of starting
// one. A new goroutine's stack grows, copied each time, as deep as a
// launch runs: starting one per launch cost more than the launch's own
// work on the host backend's small-message path. It leaves a task that
// another goroutine runs, or that is held for a Synchronize, alone.
func (s *Stream) work() {
	for {
		s.mu.Lock()
		if !s.ready() {
			s.mu.Unlock()
			if !s.awaitWork() {
				return
			}
			continue
		}
		t, failed := s.take()
		s.mu.Unlock()
		s.finish(t, failed)
	}
}

// ready reports whether the worker may take queue[head] (s.mu held).
func (s *Stream) ready() bool { return s.head < len(s.queue) && !s.busy && !s.held }

// take marks queue[head] running and returns it with the sticky error, if
// any, which skips it (s.mu held).
func (s *Stream) take() (task, error) {
	s.busy, s.held = true, false
	return s.queue[s.head], s.err
}

// finish runs t, taken from the queue, unless the stream failed before
// it, then ends it: its place in the queue is freed, a failure becomes
// the sticky error, sleeping Synchronize calls are told and its event
// completes.
func (s *Stream) finish(t task, failed error) {
	var err error
	if failed == nil && t.run != nil {
		err = runTask(t.run)
	}
	s.mu.Lock()
	sticky := s.end(err)
	s.mu.Unlock()
	if t.ev != nil {
		t.ev.complete(sticky)
	}
}

// end removes queue[head], which ran with err, and returns the sticky
// error (s.mu held).
func (s *Stream) end(err error) error {
	s.queue[s.head] = task{}
	s.head++
	if s.head == len(s.queue) {
		s.queue, s.head = s.queue[:0], 0
	}
	s.busy = false
	n := s.finished.Add(1)
	if err != nil && s.err == nil {
		s.err, s.errAt = err, n
	}
	for _, c := range s.sleepers {
		select {
		case c <- struct{}{}:
		default: // signalled already
		}
	}
	return s.err
}

// parkIdle is how long a stream's worker waits for work, parked, before
// it exits.
const parkIdle = time.Second

// awaitWork waits while the worker has nothing to take: it polls for the
// spin time, then parks until woken (wakeWorker, Close) or its timer
// fires, and exits, giving up the worker's ownership (false), after
// parkIdle or once the stream is closed. While tasks are being held for a
// Synchronize (help.go) the timer fires every watchEvery instead, and
// the worker takes a task held since its previous look.
func (s *Stream) awaitWork() bool {
	seen := s.kicks.Load()
	if spinUntil(func() bool { return s.kicks.Load() != seen }) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.ready() {
		if s.closed {
			s.running = false
			return false
		}
		d, holds, held := parkIdle, s.holds, s.held
		if s.watch {
			d = watchEvery
		}
		s.parked = true
		s.mu.Unlock()
		woken := s.park(d)
		s.mu.Lock()
		s.parked = false
		select { // a wake-up that crossed the timer's expiry
		case <-s.wake:
			woken = true
		default:
		}
		switch {
		case woken:
		case held && s.held && s.holds == holds: // one task held all along
			s.held = false
		case s.held || s.holds != holds:
			s.watch = true
		case s.watch: // a whole watch without holds
			s.watch = false
		default: // idle for parkIdle
			s.running = false
			return false
		}
	}
	return true
}

// park waits for a wake-up, at most d; true if woken.
func (s *Stream) park(d time.Duration) bool {
	if s.idle == nil {
		s.idle = time.NewTimer(d)
	} else {
		s.idle.Reset(d)
	}
	select {
	case <-s.wake:
		s.idle.Stop()
		return true
	case <-s.idle.C:
		return false
	}
}

// spinUntil polls cond for the host streams' spin time
// (futex.StreamSpinTime; none when it is 0), yielding its goroutine's
// turn every 64 polls, and reports whether cond became true.
func spinUntil(cond func() bool) bool {
	spin := futex.StreamSpinTime()
	if spin <= 0 {
		return cond()
	}
	var began time.Time
	for i := 0; ; i++ {
		if cond() {
			return true
		}
		if i%64 != 63 {
			continue
		}
		if began.IsZero() {
			began = time.Now()
		} else if time.Since(began) >= spin {
			return false
		}
		runtime.Gosched()
	}
}

// runTask runs f, turning a panic into an error and any error that is not a
// *gccl.Error into one.
func runTask(f Task) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = gccl.Errorf(gccl.InternalError, "stream task", "task panicked: %v", r)
		}
	}()
	return typed(f.Run())
}

// typed is err as a *gccl.Error: a foreign error is wrapped as internal.
func typed(err error) error {
	if err == nil {
		return nil
	}
	var ge *gccl.Error // declared here: errors.As puts it on the heap
	if !errors.As(err, &ge) {
		err = gccl.Wrap(gccl.InternalError, "stream task", err)
	}
	return err
}

// Query reports whether everything enqueued so far has run (or been
// skipped), and the sticky error, if any.
func (s *Stream) Query() (done bool, err error) {
	if s == nil {
		return false, gccl.Errorf(gccl.InvalidArgument, "stream", "nil host stream")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.wakeWorker() // a Query loop may never synchronize
	}
	return s.finished.Load() == s.enqueued.Load(), s.err
}

// Err returns the sticky error, or nil.
func (s *Stream) Err() error {
	_, err := s.Query()
	return err
}

// Close releases the stream. Work already enqueued still runs; new work is
// refused. Close returns at once, is safe on nil and safe to call twice.
func (s *Stream) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	switch {
	case s.held:
		s.wakeWorker() // it runs the held task, then exits
	case s.parked:
		s.unpark() // the worker exits
	}
	s.mu.Unlock()
	return nil
}

// Closed reports whether Close was called.
func (s *Stream) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// WaitEvent makes work enqueued on s after this call wait until e has
// completed, without blocking the caller. If e's stream failed, s fails
// too. The wait is bounded by the stream's timeout.
func (s *Stream) WaitEvent(e *Event) error {
	if e == nil {
		return gccl.Errorf(gccl.InvalidArgument, "event", "nil event; use an event from RecordEvent")
	}
	return s.push(task{run: funcTask(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		if err := e.Wait(ctx); err != nil {
			return gccl.Errorf(gccl.Code(err), "event", "waiting for an event of another stream: %w", err)
		}
		return nil
	})})
}
