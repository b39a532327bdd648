package hoststream

import (
	"context"
	"slices"
	"time"

	"github.com/gccl/gccl"
)

// Synchronize waits until everything enqueued before the call has run and
// returns the sticky error if a task up to there failed. An expired ctx
// gives gccl.ErrTimeout. It runs the tasks up to there that are held for
// it itself (help.go); such a task ends when its own waits do, whatever
// ctx says.
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
// runs those it may (help), polls for the spin time, then sleeps until a
// task finishes, ctx (nil: none) ends or the deadline (zero: none)
// passes, and helps and checks again.
func (s *Stream) synchronize(ctx context.Context, deadline time.Time) error {
	if s == nil {
		return gccl.Errorf(gccl.InvalidArgument, "stream", "nil host stream")
	}
	target := s.enqueued.Load()
	s.help(target)
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
		s.help(target)
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
