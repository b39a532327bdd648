package regs

import (
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/capture"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine/internal/errs"
)

// Hold keeps the registrations from being deregistered while the op may
// run: until the stream passes it, or, while s is being captured, for the
// lifetime of the graph. The returned function finishes the hold after
// the op was enqueued (ok) or undoes it (!ok).
func (v *View) Hold(bufs []Buf, s cuda.Stream) (func(ok bool) error, error) {
	releases := make([]func(), 0, len(bufs))
	all := func() { runAll(releases) }
	for _, b := range bufs {
		r, err := b.Reg.Acquire()
		if err != nil {
			all()
			return nil, err
		}
		releases = append(releases, r)
	}
	return func(ok bool) error {
		if !ok {
			all()
			return nil
		}
		captured, err := capture.Retain(v.cfg.Driver, gccl.Stream(s), all)
		if err != nil || captured {
			if err != nil {
				all()
			}
			return err
		}
		return v.holdUntilDone(bufs, releases, s)
	}, nil
}

// holdUntilDone turns the plain holds of an eager op (releases, one per
// buffer) into pending holds that end once an event recorded after the op
// completed: Deregister polls it (cuEventQuery), so a caller that saw the
// stream finish may deregister at once, and the stream never waits for a
// host function. A registration with too many pending holds on other
// streams keeps its plain hold, released by a host function as before.
func (v *View) holdUntilDone(bufs []Buf, releases []func(), s cuda.Stream) error {
	d, err := v.events.record(v, s)
	if err != nil {
		runAll(releases)
		return err
	}
	var rest []func()
	for i, b := range bufs {
		d.refs.Add(1)
		held, err := b.Reg.AcquireUntil(orderKey(s), d)
		if !held {
			d.Drop()
		}
		if err != nil {
			runAll(releases[i:])
			runAll(rest)
			d.Drop()
			return err
		}
		if held {
			releases[i]()
		} else {
			rest = append(rest, releases[i])
		}
	}
	d.Drop() // the reference record gave us
	if len(rest) == 0 {
		return nil
	}
	// Released synchronously, so a caller that saw the stream finish may
	// deregister at once. It never calls the driver (a host function must
	// not): a collective registration keeps a handle while used, so
	// dropping a use never releases its resources.
	v.hostFuncHolds.Add(1)
	if err := v.cfg.Driver.LaunchHostFunc(s, func() { runAll(rest) }); err != nil {
		runAll(rest)
		return err
	}
	return nil
}

// runAll calls each of fs.
func runAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// eventPool lends the CUDA events that end the pending registration holds
// of eager zero-copy ops (holdUntilDone): one event is recorded after each
// op and returns to the pool once every registration holding it let go of
// it. The view destroys every event it made when it closes.
type eventPool struct {
	// mu guards the fields; polls hold it for reading, so close cannot
	// destroy an event while it is being queried.
	mu     sync.RWMutex
	free   []cuda.Event
	all    []cuda.Event // every event made, destroyed by destroy
	closed bool
}

// opDone is one op's completion: an event recorded on its stream after
// it. It satisfies regcache.Completion; refs counts the holds on it plus
// one while holdUntilDone hands it out.
type opDone struct {
	v    *View
	ev   cuda.Event
	refs atomic.Int32
}

// record takes an event from the pool (making one if none is free) and
// records it on s (device context current).
func (p *eventPool) record(v *View, s cuda.Stream) (*opDone, error) {
	ev, err := p.get(v.cfg.Driver)
	if err != nil {
		return nil, err
	}
	if err := v.cfg.Driver.EventRecord(ev, s); err != nil {
		p.put(ev)
		return nil, gccl.Errorf(gccl.Code(err), "stream", "recording the completion event of a zero-copy operation: %w", err)
	}
	d := &opDone{v: v, ev: ev}
	d.refs.Store(1)
	return d, nil
}

func (p *eventPool) get(drv cuda.Driver) (cuda.Event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, gccl.Errorf(gccl.InvalidUsage, "comm", "the communicator's GPU backend is closed")
	}
	if n := len(p.free); n > 0 {
		ev := p.free[n-1]
		p.free = p.free[:n-1]
		return ev, nil
	}
	ev, err := drv.EventCreate(cuda.EventDisableTiming)
	if err != nil {
		return 0, gccl.Errorf(gccl.Code(err), "comm", "creating a completion event: %w", err)
	}
	p.all = append(p.all, ev)
	return ev, nil
}

// put returns ev to the pool. An event may come back before the work it
// was recorded after finished (its hold was replaced by a later one):
// recording it again is allowed, and a query then reports the new record.
func (p *eventPool) put(ev cuda.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.free = append(p.free, ev)
	}
}

// made is how many events the pool created.
func (p *eventPool) made() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.all)
}

// destroy destroys every event the pool made (device context current,
// after the device's work finished); later polls report done.
func (p *eventPool) destroy(drv cuda.Driver) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var first error
	for _, ev := range p.all {
		first = errs.First(first, drv.EventDestroy(ev))
	}
	p.all, p.free = nil, nil
	return first
}

// Done polls the event without blocking; a failed query (a broken stream,
// a closed device) counts as done, so it cannot pin a registration.
func (d *opDone) Done() bool {
	p := &d.v.events
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return true
	}
	var done bool
	err := d.v.cfg.Device.Do(func() (err error) {
		done, err = d.v.cfg.Driver.EventQuery(d.ev)
		return err
	})
	return done || err != nil
}

// Drop releases one hold's reference; the last returns the event.
func (d *opDone) Drop() {
	if d.refs.Add(-1) == 0 {
		d.v.events.put(d.ev)
	}
}

// orderKey is the order key of pending holds for ops on s: ops on one
// stream finish in order. The per-thread default stream is a different
// stream on every thread, so its holds are not ordered (0).
func orderKey(s cuda.Stream) uint64 {
	if s == cudaStreamPerThread {
		return 0
	}
	return uint64(s) + 1
}

// cudaStreamPerThread is CU_STREAM_PER_THREAD.
const cudaStreamPerThread cuda.Stream = 0x2
