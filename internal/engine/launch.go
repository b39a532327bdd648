package engine

import (
	"errors"
	"slices"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

// Backend runs launched operations: the host backend enqueues a task on a
// host stream that moves data over the transports; a GPU backend would
// launch kernels on the CUstream. Submit must not block on the operation.
type Backend interface {
	Submit(e *Engine, l *launch) error
}

// launchDone is a Backend that is done with a launch when Submit returns
// (it enqueued everything in the call and kept no reference to the launch
// or its ops), so the launch can be reused for a later one.
type launchDone interface {
	doneOnReturn()
}

// launches recycles the launches of launchDone backends.
var launches = sync.Pool{New: func() any { return new(launch) }}

// newLaunch returns an empty launch for ops on stream s.
func newLaunch(s gccl.Stream, nops int) *launch {
	l := launches.Get().(*launch)
	l.stream, l.ticket = s, 0
	l.ops, l.more = l.inline[:0], l.more[:0]
	if nops > launchInline {
		l.ops = make([]Op, 0, nops)
	}
	return l
}

// recycle returns l for reuse when the engine's backend is done with it on
// return from Submit (or l never reached Submit).
func (e *Engine) recycle(l *launch, submitted bool) {
	if l == nil {
		return
	}
	if _, done := e.backend.(launchDone); submitted && !done {
		return
	}
	l.ops = nil
	launches.Put(l)
}

// launch is one engine's share of one Launch or group: its ops, in issue
// order, the streams they use (the first op's, then any others, which the
// launch joins) and its place in the engine's issue order.
type launch struct {
	ops    []Op
	stream gccl.Stream
	more   []gccl.Stream // the ops' other streams, each once
	ticket uint64
	inline [launchInline]Op // ops' storage for small launches (one allocation)
}

// launchInline is how many ops a launch holds without a second allocation.
const launchInline = 4

// Work is one engine's ops in a group launch.
type Work struct {
	Engine *Engine
	Ops    []Op
}

// Launch validates ops and submits them as one launch: collectives run in
// issue order, then the point-to-point ops progress concurrently. Nothing is
// submitted if any op is invalid.
func (e *Engine) Launch(ops []Op) error {
	if e == nil {
		return gccl.Errorf(gccl.InvalidArgument, "comm", "group member 0 has a nil communicator")
	}
	l, err := e.prepare(ops)
	if err != nil || l == nil {
		return err
	}
	err = e.submit(l)
	e.recycle(l, true)
	return err
}

// LaunchGroup submits a group: one launch per engine (per device). Every op
// of every engine is validated before anything is submitted. On the host
// backend, launches that share a stream become one task (see submitHost).
func LaunchGroup(works []Work) error {
	ls, err := prepareAll(works)
	if err != nil {
		return err
	}
	if len(ls) > 1 && capturingRegs(works, ls) {
		return submitConcurrently(works, ls)
	}
	var host []hostPart
	for i, w := range works {
		switch {
		case ls[i] == nil:
		case isHost(w.Engine):
			host = append(host, hostPart{w.Engine, ls[i]})
		case err == nil:
			err = w.Engine.submit(ls[i])
			w.Engine.recycle(ls[i], true)
		default:
			w.Engine.recycle(ls[i], false) // not submitted
		}
	}
	if err != nil {
		for _, p := range host {
			p.e.recycle(p.l, false)
		}
		return err
	}
	return submitHost(host)
}

// prepareAll validates every work's ops: one launch per work (nil for no ops).
func prepareAll(works []Work) ([]*launch, error) {
	ls := make([]*launch, 0, len(works))
	for i, w := range works {
		var err error
		var l *launch
		switch {
		case w.Engine == nil:
			err = gccl.Errorf(gccl.InvalidArgument, "comm", "group member %d has a nil communicator", i)
		case appearsBefore(works, i):
			err = gccl.Errorf(gccl.InvalidUsage, "comm", "communicator appears twice in one group launch; merge its ops")
		default:
			l, err = w.Engine.prepare(w.Ops)
		}
		if err != nil {
			for j, l := range ls {
				works[j].Engine.recycle(l, false)
			}
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// capturingRegs reports whether a GPU engine of the group captures its
// launch with graph registration on: its submit then agrees with its peers
// (capturedRegs), and peers in this process are engines of the same group,
// so the engines must submit at the same time.
func capturingRegs(works []Work, ls []*launch) bool {
	for i, w := range works {
		if g, ok := w.Engine.backend.(*gpuBackend); ok && ls[i] != nil && g.capturing(w.Engine, cuda.Stream(ls[i].stream)) {
			return true
		}
	}
	return false
}

// submitConcurrently submits every engine's launch on its own goroutine and
// returns the first error.
func submitConcurrently(works []Work, ls []*launch) error {
	errs := make([]error, len(works))
	var wg sync.WaitGroup
	for i, w := range works {
		if ls[i] == nil {
			continue
		}
		wg.Go(func() {
			errs[i] = w.Engine.submit(ls[i])
			w.Engine.recycle(ls[i], true)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// appearsBefore reports whether works[i]'s engine is also one of works[:i]'s.
// Groups span a handful of devices, so a scan beats building a set.
func appearsBefore(works []Work, i int) bool {
	for j := range i {
		if works[j].Engine == works[i].Engine {
			return true
		}
	}
	return false
}

// submit gives l the engine's next ticket and hands it to the backend.
func (e *Engine) submit(l *launch) error {
	l.ticket = e.order.take()
	if err := e.backend.Submit(e, l); err != nil {
		e.order.release() // keep later tickets moving
		return err
	}
	return nil
}

// prepare validates ops for this engine; nil launch for no ops.
func (e *Engine) prepare(ops []Op) (*launch, error) {
	if e.Closed() {
		return nil, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator is closed or aborted; create a new one")
	}
	if err := e.AsyncError(); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	l := newLaunch(ops[0].Stream, len(ops))
	var p2p []Op
	for i := range ops {
		o := ops[i]
		if err := o.Validate(e.rank, e.nranks, e.validOp); err != nil {
			e.recycle(l, false)
			return nil, err
		}
		if err := l.addStream(o.Stream, e.backend); err != nil {
			e.recycle(l, false)
			return nil, err
		}
		if o.Kind.IsP2P() {
			p2p = append(p2p, o)
			continue
		}
		if !o.Kind.collective().Reduces() {
			o.Op = gccl.Sum // unused by this kind
		} else if o.Op < 0 || o.Op >= gccl.NumBuiltinOps {
			var err error
			if o.premul, err = e.userOp(o.Op, o.Type); err != nil {
				e.recycle(l, false)
				return nil, err
			}
		}
		l.ops = append(l.ops, o)
	}
	l.ops = append(l.ops, p2p...)
	return l, nil
}

// addStream notes that an op of l runs on s. A launch on several streams
// joins them (NCCL >= 2.20): it starts once every stream has reached it and
// later work on any of them waits for it. The host backend joins streams;
// the GPU backend takes one stream per launch.
func (l *launch) addStream(s gccl.Stream, b Backend) error {
	if s == l.stream || slices.Contains(l.more, s) {
		return nil
	}
	if _, host := b.(HostBackend); !host {
		return gccl.Errorf(gccl.InvalidUsage, "stream", "one communicator's ops in a group must use one stream on the GPU backend (got %#x and %#x)", l.stream, s)
	}
	l.more = append(l.more, s)
	return nil
}
