package hoststream

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gccl/gccl"
)

// DefaultTimeout bounds the cross-stream waits of WaitEvent on streams made
// by New. Use NewWithTimeout for another bound.
const DefaultTimeout = 5 * time.Minute

// task is one queue entry: work to run, or an event to complete, or both.
type task struct {
	run func() error
	ev  *Event
}

// Stream is an ordered host work queue. The zero value is not usable; make
// streams with New. All methods are safe for concurrent use.
type Stream struct {
	timeout time.Duration

	mu       sync.Mutex
	queue    []task
	running  bool  // a worker goroutine owns the queue
	err      error // sticky: the first failure
	closed   bool
	enqueued uint64
	finished uint64
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
	return &Stream{timeout: d}
}

// Enqueue appends f to the stream. Tasks run one at a time in the order they
// were enqueued. Once a task has failed, later tasks are skipped. Enqueue
// never blocks; it fails only for a nil f or a closed stream.
func (s *Stream) Enqueue(f func() error) error {
	if f == nil {
		return gccl.Errorf(gccl.InvalidArgument, "task", "nil task; pass a function to run on the stream")
	}
	return s.push(task{run: f})
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
	s.enqueued++
	if !s.running {
		s.running = true
		go s.work()
	}
	return nil
}

// work drains the queue; it exits when the queue is empty, so an idle
// stream holds no goroutine.
func (s *Stream) work() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			s.queue = s.queue[:0]
			s.mu.Unlock()
			return
		}
		t := s.queue[0]
		s.queue[0] = task{}
		s.queue = s.queue[1:]
		failed := s.err
		s.mu.Unlock()

		var err error
		if failed == nil && t.run != nil {
			err = runTask(t.run)
		}

		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = err
		}
		s.finished++
		sticky := s.err
		s.mu.Unlock()
		if t.ev != nil {
			t.ev.complete(sticky)
		}
	}
}

// runTask runs f, turning a panic into an error and any error that is not a
// *gccl.Error into one.
func runTask(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = gccl.Errorf(gccl.InternalError, "stream task", "task panicked: %v", r)
		}
	}()
	err = f()
	var ge *gccl.Error
	if err != nil && !errors.As(err, &ge) {
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
	return s.finished == s.enqueued, s.err
}

// Err returns the sticky error, or nil.
func (s *Stream) Err() error {
	_, err := s.Query()
	return err
}

// Synchronize waits until everything enqueued before the call has run and
// returns the sticky error. An expired ctx gives gccl.ErrTimeout.
func (s *Stream) Synchronize(ctx context.Context) error {
	if s == nil {
		return gccl.Errorf(gccl.InvalidArgument, "stream", "nil host stream")
	}
	s.mu.Lock()
	closedIdle := s.closed && s.finished == s.enqueued
	err := s.err
	s.mu.Unlock()
	if closedIdle {
		return err
	}
	return s.RecordEvent().Wait(ctx)
}

// Close releases the stream. Work already enqueued still runs; new work is
// refused. Close returns at once, is safe on nil and safe to call twice.
func (s *Stream) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
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
	return s.push(task{run: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		if err := e.Wait(ctx); err != nil {
			return gccl.Errorf(gccl.Code(err), "event", "waiting for an event of another stream: %w", err)
		}
		return nil
	}})
}
