package hoststream

import (
	"context"
	"errors"
	"runtime"
	"slices"
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
	queue    []task // queue[head:] waits; its storage is reused
	head     int
	running  bool          // a worker goroutine owns the queue
	parked   bool          // the worker waits on wake for work (awaitWork)
	wake     chan struct{} // cap 1: push or Close tells a parked worker
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

// EnqueueTask is Enqueue of t.Run.
func (s *Stream) EnqueueTask(t Task) error {
	if t == nil {
		return gccl.Errorf(gccl.InvalidArgument, "task", "nil task; pass a task to run on the stream")
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
	switch {
	case !s.running:
		s.running = true
		go s.work()
	case s.parked:
		s.unpark()
	}
	return nil
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
// work on the host backend's small-message path.
func (s *Stream) work() {
	for {
		s.mu.Lock()
		if s.head == len(s.queue) {
			s.mu.Unlock()
			if !s.awaitWork() {
				return
			}
			continue
		}
		t := s.queue[s.head]
		s.queue[s.head] = task{}
		s.head++
		failed := s.err
		s.mu.Unlock()

		var err error
		if failed == nil && t.run != nil {
			err = runTask(t.run)
		}

		s.mu.Lock()
		n := s.finished.Add(1)
		if err != nil && s.err == nil {
			s.err, s.errAt = err, n
		}
		sticky := s.err
		for _, c := range s.sleepers {
			select {
			case c <- struct{}{}:
			default: // signalled already
			}
		}
		s.mu.Unlock()
		if t.ev != nil {
			t.ev.complete(sticky)
		}
	}
}

// parkIdle is how long a stream's worker waits for work, parked, before
// it exits.
const parkIdle = time.Second

// awaitWork waits for work while the queue is empty: it polls for the spin
// time, then parks until push or Close wakes it or parkIdle passes. It
// returns false, the worker's ownership given up, once the queue is still
// empty after that, or the stream is closed.
func (s *Stream) awaitWork() bool {
	seen := s.enqueued.Load()
	if spinUntil(func() bool { return s.enqueued.Load() != seen }) {
		return true
	}
	s.mu.Lock()
	if s.head < len(s.queue) {
		s.mu.Unlock()
		return true
	}
	woken := false
	if !s.closed {
		s.parked = true
		s.mu.Unlock()
		woken = s.park()
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	s.parked = false
	select { // a wake-up that crossed the timer's expiry
	case <-s.wake:
	default:
	}
	if s.head < len(s.queue) || woken && !s.closed {
		return true
	}
	s.running = false
	s.queue, s.head = s.queue[:0], 0
	return false
}

// park waits for a wake-up, at most parkIdle; true if woken.
func (s *Stream) park() bool {
	if s.idle == nil {
		s.idle = time.NewTimer(parkIdle)
	} else {
		s.idle.Reset(parkIdle)
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
	if err = f.Run(); err == nil {
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
	return s.finished.Load() == s.enqueued.Load(), s.err
}

// Err returns the sticky error, or nil.
func (s *Stream) Err() error {
	_, err := s.Query()
	return err
}

// Synchronize waits until everything enqueued before the call has run and
// returns the sticky error if a task up to there failed. An expired ctx
// gives gccl.ErrTimeout.
func (s *Stream) Synchronize(ctx context.Context) error {
	return s.synchronize(ctx, time.Time{})
}

// SynchronizeWithin is Synchronize bounded by d from now, with no context
// or timer unless it has to sleep: it first polls for the host's spin
// time (package futex), as the stream's worker does.
func (s *Stream) SynchronizeWithin(d time.Duration) error {
	return s.synchronize(nil, time.Now().Add(d))
}

// synchronize waits until the tasks enqueued so far have finished: it
// polls for the spin time, then sleeps until a task finishes, ctx (nil:
// none) ends or the deadline (zero: none) passes, and checks again.
func (s *Stream) synchronize(ctx context.Context, deadline time.Time) error {
	if s == nil {
		return gccl.Errorf(gccl.InvalidArgument, "stream", "nil host stream")
	}
	target := s.enqueued.Load()
	spinUntil(func() bool { return s.finished.Load() >= target })
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	var sig chan struct{}
	var timer *time.Timer
	var expire <-chan time.Time
	defer s.wakeUp(&sig, &timer)
	for {
		s.mu.Lock()
		if s.finished.Load() >= target {
			var err error
			if s.err != nil && s.errAt <= target {
				err = s.err
			}
			s.mu.Unlock()
			return err
		}
		if sig == nil {
			sig = s.sleep()
		}
		if timer == nil && !deadline.IsZero() {
			timer, s.timer = s.timer, nil
			if timer == nil {
				timer = time.NewTimer(time.Until(deadline))
			} else {
				timer.Reset(time.Until(deadline))
			}
			expire = timer.C
		}
		s.mu.Unlock()
		select {
		case <-sig:
		case <-done:
			return timedOut(ctx.Err())
		case <-expire:
			return timedOut(context.DeadlineExceeded)
		}
	}
}

// sleep registers a sleeping Synchronize and returns its channel (s.mu held).
func (s *Stream) sleep() chan struct{} {
	var c chan struct{}
	if n := len(s.spare); n > 0 {
		c, s.spare = s.spare[n-1], s.spare[:n-1]
	} else {
		c = make(chan struct{}, 1)
	}
	s.sleepers = append(s.sleepers, c)
	return c
}

// wakeUp ends a Synchronize's sleep: its channel and timer, if it took
// them, are kept for the next.
func (s *Stream) wakeUp(sig *chan struct{}, timer **time.Timer) {
	if *sig == nil && *timer == nil {
		return
	}
	if t := *timer; t != nil {
		t.Stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := *sig; c != nil {
		i := slices.Index(s.sleepers, c)
		s.sleepers = slices.Delete(s.sleepers, i, i+1)
		select {
		case <-c: // a signal nobody took
		default:
		}
		s.spare = append(s.spare, c)
	}
	if s.timer == nil {
		s.timer = *timer
	}
}

// timedOut is the error of a wait on stream work that ended with err.
func timedOut(err error) error {
	return gccl.Errorf(gccl.TimeoutError, "stream",
		"stream work did not finish in time (%w); a task is stuck or the deadline is too short", err)
}

// Close releases the stream. Work already enqueued still runs; new work is
// refused. Close returns at once, is safe on nil and safe to call twice.
func (s *Stream) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	if s.parked {
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
