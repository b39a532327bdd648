package wait

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Scope is a context.Context for an operation of many short waits: it
// ends at its deadline, when its parent ends or when cancelled, and costs
// no allocation and no timer until a wait asks for its Done channel (to
// select on it). Polling waits (package futex's, a Poller's, CtxErr) ask
// only Err and Deadline, so an operation whose waits all poll never makes
// a timer; the first Done makes one context.WithDeadline of the parent,
// which Release stops. Contexts derived from a Scope (WithCancel) hang
// below that one.
//
// A Scope lives in a value that is reused (a launch, a backend's lane
// set): Reset before use, Release after, and neither while a wait may
// still use it. Deadline, Err, Done, Value and Cancel are safe for
// concurrent use in between.
type Scope struct {
	parent    context.Context
	deadline  time.Time
	cancelled atomic.Bool

	mu     sync.Mutex
	armed  context.Context // made by the first Done
	disarm context.CancelFunc
}

// Reset makes s end at deadline or with parent (a context that is never
// done when nil).
func (s *Scope) Reset(parent context.Context, deadline time.Time) {
	s.Release()
	if parent == nil {
		parent = context.Background()
	}
	s.parent, s.deadline = parent, deadline
	s.cancelled.Store(false)
}

// Release stops the timer that Done made, if any. Waits must be over.
func (s *Scope) Release() {
	s.mu.Lock()
	if s.disarm != nil {
		s.disarm()
	}
	s.armed, s.disarm = nil, nil
	s.mu.Unlock()
}

// Cancel ends s at once: every wait on it ends with context.Canceled.
func (s *Scope) Cancel() {
	s.cancelled.Store(true)
	s.mu.Lock()
	if s.disarm != nil {
		s.disarm()
	}
	s.mu.Unlock()
}

// Deadline is the deadline Reset gave.
func (s *Scope) Deadline() (time.Time, bool) { return s.deadline, true }

// Err is context.DeadlineExceeded once the deadline has passed (checked
// first, so that a deadline that passed before an abort still reads as
// one), else the parent's error, else context.Canceled after Cancel.
func (s *Scope) Err() error {
	if !time.Now().Before(s.deadline) {
		return context.DeadlineExceeded
	}
	if err := s.parent.Err(); err != nil {
		return err
	}
	if s.cancelled.Load() {
		return context.Canceled
	}
	return nil
}

// Done returns a channel closed when s ends; the first call makes the
// timer that closes it at the deadline.
func (s *Scope) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed == nil {
		s.armed, s.disarm = context.WithDeadline(s.parent, s.deadline)
		if s.cancelled.Load() {
			s.disarm()
		}
	}
	return s.armed.Done()
}

// Value is the parent's value of key; once Done was called, the value of
// the context behind Done, so that contexts derived from s register with
// it (and no goroutine watches s for them).
func (s *Scope) Value(key any) any {
	s.mu.Lock()
	c := s.armed
	s.mu.Unlock()
	if c == nil {
		c = s.parent
	}
	return c.Value(key)
}
