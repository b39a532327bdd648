package hoststream

import (
	"context"

	"github.com/gccl/gccl"
)

// Event marks a point in a stream: it completes when the stream has run (or
// skipped) everything enqueued before it. Events are made by
// Stream.RecordEvent and are safe for concurrent use.
type Event struct {
	done chan struct{}
	err  error // the stream's sticky error at the event; set before done is closed
}

func newEvent() *Event { return &Event{done: make(chan struct{})} }

func (e *Event) complete(err error) {
	e.err = err
	close(e.done)
}

// RecordEvent returns an event at the current end of the stream. On a
// closed stream the event is already complete and carries
// gccl.ErrInvalidUsage.
func (s *Stream) RecordEvent() *Event {
	e := newEvent()
	if err := s.push(task{ev: e}); err != nil {
		e.complete(err)
	}
	return e
}

// Query reports whether the event has completed and, if so, the error of
// its stream at that point. A nil event is complete.
func (e *Event) Query() (done bool, err error) {
	if e == nil {
		return true, nil
	}
	select {
	case <-e.done:
		return true, e.err
	default:
		return false, nil
	}
}

// Wait blocks until the event completes or ctx expires. It returns the
// stream's error at the event, or gccl.ErrTimeout.
func (e *Event) Wait(ctx context.Context) error {
	if e == nil {
		return gccl.Errorf(gccl.InvalidArgument, "event", "nil event; use an event from RecordEvent")
	}
	select {
	case <-e.done:
		return e.err
	default:
	}
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
		return timedOut(ctx.Err())
	}
}
