package streamjoin

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/capture"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
)

// Chain keeps one communicator's kernels in issue order whatever streams
// they are enqueued on, as NCCL does (package gpu and gpunet). Every
// rank's kernels must run in the same order: two launches of one
// communicator running at once, or in another order on two ranks, would
// pair different operations' flags, areas or FIFO slots (wrong data, or
// waits that never end).
//
// It costs nothing while launches stay on one stream. When a launch comes
// on another stream than the previous one, an event recorded on the
// previous stream now (it covers that launch and whatever was enqueued
// there before this call, all of it issued earlier, so no cycle can form)
// is made the new stream's next dependency.
//
// Captured launches are chained the same way within one capture (the event
// joins the two captured streams in the graph). Between a capture and
// eager work, or two captures, there is no link to make (CUDA forbids it):
// a graph's kernels run when the graph is launched, and the application
// orders graph launches against eager operations of the same communicator
// through the stream it launches the graph on (docs/gpu.md).
//
// A launch on several streams (engine.Launch.More) runs on its first
// stream: the backend makes that stream wait for the others
// (Events.Before), and the others wait for the launch (Events.After),
// with the same event. The zero Chain has seen no launch.
type Chain struct {
	last  cuda.Stream
	valid bool // last is set
}

// Join makes s wait, through links, for the communicator's previous launch
// when that went to another stream (the engine's ticket held, the device
// context current).
func (ch *Chain) Join(drv cuda.Driver, links *Events, s cuda.Stream) error {
	prev, had := ch.last, ch.valid
	ch.last, ch.valid = s, true
	if !had || prev == s {
		return nil
	}
	link, err := linkable(drv, prev, s)
	if err != nil || !link {
		return err
	}
	if err := links.Link(prev, s); err != nil {
		return gccl.Errorf(gccl.Code(err), "stream",
			"ordering stream %#x after stream %#x, where this communicator's previous operation went (was it destroyed while that operation ran?): %w", uintptr(s), uintptr(prev), err)
	}
	return nil
}

// Reset forgets the previous launch (the backend is closing).
func (ch *Chain) Reset() { *ch = Chain{} }

// linkable reports whether a dependency of s on prev can be expressed:
// both eager, or both captured into the same graph.
func linkable(drv cuda.Driver, prev, s cuda.Stream) (bool, error) {
	a, err := capture.Info(drv, gccl.Stream(prev))
	if err != nil {
		return false, gccl.Errorf(gccl.Code(err), "stream",
			"stream %#x, where this communicator's previous operation went, cannot be queried (destroyed while that operation ran?): %w", uintptr(prev), err)
	}
	b, err := capture.Info(drv, gccl.Stream(s))
	if err != nil {
		return false, err
	}
	return a.Active == b.Active && a.ID == b.ID, nil
}

// Enqueue issues l's ops on l's stream as both GPU backends do: chained
// after the communicator's previous launch (Join), after the work
// enqueued so far on l's other streams (Before), the collectives one by
// one in issue order (coll; an error names the op; a collective of no
// elements enqueues nothing on either backend, so coll never sees one),
// then the point-to-point ops together (p2p), and l's other streams made
// to wait for it all (After). In l's turn, the device context current.
func (ch *Chain) Enqueue(drv cuda.Driver, links *Events, l *engine.Launch,
	coll func(*engine.Op, cuda.Stream) error, p2p func([]engine.Op, cuda.Stream) error) error {
	s := cuda.Stream(l.Stream)
	if err := ch.Join(drv, links, s); err != nil {
		return err
	}
	if err := links.Before(s, l.More); err != nil {
		return err
	}
	first := len(l.Ops)
	for i := range l.Ops {
		if l.Ops[i].Kind.IsP2P() {
			first = i
			break
		}
		if l.Ops[i].Count == 0 {
			continue
		}
		if err := coll(&l.Ops[i], s); err != nil {
			return gccl.Errorf(gccl.Code(err), "comm", "%v: %w", l.Ops[i].String(), err)
		}
	}
	if err := p2p(l.Ops[first:], s); err != nil {
		return err
	}
	return links.After(s, l.More)
}
