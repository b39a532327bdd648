package engine

import (
	"github.com/gccl/gccl"
)

// Backend runs launched operations: the host backend enqueues a task on a
// host stream that moves data over the transports; a GPU backend would
// launch kernels on the CUstream. Submit must not block on the operation.
type Backend interface {
	Submit(e *Engine, l *launch) error
}

// launch is one engine's share of one Launch or group: its ops, in issue
// order, all on one stream, and its place in the engine's issue order.
type launch struct {
	ops    []Op
	stream gccl.Stream
	ticket uint64
}

// Work is one engine's ops in a group launch.
type Work struct {
	Engine *Engine
	Ops    []Op
}

// Launch validates ops and submits them as one launch: collectives run in
// issue order, then the point-to-point ops progress concurrently. Nothing is
// submitted if any op is invalid.
func (e *Engine) Launch(ops []Op) error {
	return LaunchGroup([]Work{{Engine: e, Ops: ops}})
}

// LaunchGroup submits a group: one launch per engine (per device). Every op
// of every engine is validated before anything is submitted.
func LaunchGroup(works []Work) error {
	seen := map[*Engine]bool{}
	ls := make([]*launch, len(works))
	for i, w := range works {
		if w.Engine == nil {
			return gccl.Errorf(gccl.InvalidArgument, "comm", "group member %d has a nil communicator", i)
		}
		if seen[w.Engine] {
			return gccl.Errorf(gccl.InvalidUsage, "comm", "communicator appears twice in one group launch; merge its ops")
		}
		seen[w.Engine] = true
		l, err := w.Engine.prepare(w.Ops)
		if err != nil {
			return err
		}
		ls[i] = l
	}
	for i, w := range works {
		if ls[i] == nil {
			continue
		}
		ls[i].ticket = w.Engine.order.take()
		if err := w.Engine.backend.Submit(w.Engine, ls[i]); err != nil {
			w.Engine.order.release() // keep later tickets moving
			return err
		}
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
	l := &launch{ops: make([]Op, 0, len(ops)), stream: ops[0].Stream}
	var p2p []Op
	for i := range ops {
		o := ops[i]
		if err := o.Validate(e.rank, e.nranks, e.validOp); err != nil {
			return nil, err
		}
		if o.Stream != l.stream {
			return nil, gccl.Errorf(gccl.InvalidUsage, "stream", "one communicator's ops in a group must use one stream (got %#x and %#x)", l.stream, o.Stream)
		}
		if o.Kind.IsP2P() {
			p2p = append(p2p, o)
			continue
		}
		if !o.Kind.collective().Reduces() {
			o.Op = gccl.Sum // unused by this kind
		} else if _, _, err := e.arith(nopReducer{}, &o); err != nil {
			return nil, err
		}
		l.ops = append(l.ops, o)
	}
	l.ops = append(l.ops, p2p...)
	return l, nil
}

// nopReducer lets prepare check an op's operator without computing.
type nopReducer struct{}

func (nopReducer) Combine(_, _, _ []byte, _ gccl.DataType, _ gccl.RedOp) error { return nil }
func (nopReducer) Scale(_ []byte, _ gccl.DataType, _ []byte) error             { return nil }
func (nopReducer) DivN(_ []byte, _ gccl.DataType, _ int) error                 { return nil }
