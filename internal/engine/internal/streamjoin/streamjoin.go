// Package streamjoin orders CUDA streams after one another with events,
// for the engine's GPU backends (package gpu, gpunet and viahost): a launch whose
// ops use several streams joins them (NCCL >= 2.20), and the GPU backend
// keeps a communicator's launches in issue order across streams.
//
// One event, recorded again for every link, serves them all:
// cuStreamWaitEvent waits for the work the event's latest record covers
// at the time of the call, so a later record does not change an earlier
// wait. Both calls are capturable: within one capture the event joins the
// captured streams in the graph. Between a captured stream and an eager
// one (or another capture) CUDA allows no link, so a launch whose streams
// are not all in the same capture state is refused (Check).
package streamjoin

import (
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/capture"
	"github.com/gccl/gccl/internal/cuda"
)

// Events links streams through one reusable event. Its methods need the
// device's context current; they are safe for concurrent use.
type Events struct {
	drv cuda.Driver
	mu  sync.Mutex // a record and the waits on it go together
	ev  cuda.Event // created at the first link; under mu
}

// New returns Events on drv; it creates nothing until the first link.
func New(drv cuda.Driver) *Events { return &Events{drv: drv} }

// Link makes to wait for the work enqueued on from so far.
func (j *Events) Link(from, to cuda.Stream) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.record(from); err != nil {
		return err
	}
	return j.wait(to, from)
}

// Before makes s wait for the work enqueued so far on each of others: a
// launch on s then starts only once every stream of the launch reached it.
func (j *Events) Before(s cuda.Stream, others []gccl.Stream) error {
	for _, o := range others {
		if err := j.Link(cuda.Stream(o), s); err != nil {
			return err
		}
	}
	return nil
}

// After makes each of others wait for the work enqueued on s so far (one
// record, one wait per stream): work enqueued later on any stream of a
// launch runs after it.
func (j *Events) After(s cuda.Stream, others []gccl.Stream) error {
	if len(others) == 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.record(s); err != nil {
		return err
	}
	for _, o := range others {
		if err := j.wait(cuda.Stream(o), s); err != nil {
			return err
		}
	}
	return nil
}

func (j *Events) record(s cuda.Stream) error {
	if j.ev == 0 {
		ev, err := j.drv.EventCreate(cuda.EventDisableTiming)
		if err != nil {
			return gccl.Errorf(gccl.Code(err), "stream", "creating the event that orders streams: %w", err)
		}
		j.ev = ev
	}
	if err := j.drv.EventRecord(j.ev, s); err != nil {
		return gccl.Errorf(gccl.Code(err), "stream", "recording an event on stream %#x (was it destroyed while in use?): %w", uintptr(s), err)
	}
	return nil
}

func (j *Events) wait(s, after cuda.Stream) error {
	if err := j.drv.StreamWaitEvent(s, j.ev); err != nil {
		return gccl.Errorf(gccl.Code(err), "stream", "making stream %#x wait for stream %#x: %w", uintptr(s), uintptr(after), err)
	}
	return nil
}

// Close destroys the event (the device's work that used it done). Safe
// twice.
func (j *Events) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	ev := j.ev
	j.ev = 0
	if ev == 0 {
		return nil
	}
	return j.drv.EventDestroy(ev)
}

// Check returns gccl.ErrInvalidUsage naming two streams unless each of
// others is in the same capture state as s: all eager, or all captured
// into the same graph (the application forks the other streams into the
// capture with an event first, and joins them back before it ends).
func Check(drv cuda.Driver, s cuda.Stream, others []gccl.Stream) error {
	if len(others) == 0 {
		return nil
	}
	a, err := capture.Info(drv, gccl.Stream(s))
	if err != nil {
		return err
	}
	for _, o := range others {
		b, err := capture.Info(drv, o)
		if err != nil {
			return err
		}
		if a.Active == b.Active && a.ID == b.ID {
			continue
		}
		captured, other := uintptr(s), uintptr(o)
		if !a.Active {
			captured, other = other, captured
		}
		if a.Active && b.Active {
			return gccl.Errorf(gccl.InvalidUsage, "stream", "one launch's streams %#x and %#x are being captured into different graphs; "+
				"a launch on several streams joins them, so capture them into one graph (fork one into the other's capture with an event)", captured, other)
		}
		return gccl.Errorf(gccl.InvalidUsage, "stream", "stream %#x is being captured into a CUDA graph but stream %#x of the same launch is not; "+
			"a launch on several streams joins them, so capture all of them into one graph (fork the others into the capture with an event) or none", captured, other)
	}
	return nil
}
