package regs

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/graph"
	"github.com/gccl/gccl/internal/cuda"
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
		captured, err := graph.RetainForGraph(v.cfg.Driver, gccl.Stream(s), all)
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
