package host

import (
	"context"

	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/transport"
)

// A launch that starts on the caller's goroutine (task.Start) sends what
// it sends now, without waiting, and leaves the rest, which only waits
// for peers' messages and computes, to whoever finishes it (usually the
// caller's Synchronize): a small point-to-point launch (startSendRecv),
// or a collective whose plan sends first and nothing after (the direct
// schedules: startCollective).

// start begins ops where it can without waiting and reports whether it
// did; finish must then follow.
func (b *Backend) start(ctx context.Context, ops []engine.Op) bool {
	return b.startSendRecv(ctx, ops) || b.startCollective(ctx, ops)
}

// waiting reports whether what start began has more to do.
func (b *Backend) waiting() bool {
	if b.coll.o != nil {
		return b.coll.err == nil && len(b.coll.rest) > 0
	}
	return b.p2p.receiving()
}

// finish runs what start left of ops and returns their error.
func (b *Backend) finish(ops []engine.Op) error {
	if b.coll.o != nil {
		return b.finishCollective()
	}
	return b.finishSendRecv(ops)
}

// begun is the collective that startCollective began.
type begun struct {
	o    *engine.Op // as the runner computes it (operands); nil: none
	name *engine.Op // as launched, for errors
	post func([]byte) error
	rest []algo.Step // the plan after its leading sends
	err  error       // of the leading sends: the rest does not run
}

// startCollective begins a launch of one collective that the step
// schedules run (not zero-copy) when its plan sends first and nothing
// after (schedule.lead), its peers are connected and every send fits in
// its connection's buffer now: it sends, on the runner, and reports
// true; finishCollective runs the rest. Otherwise it does nothing.
func (b *Backend) startCollective(ctx context.Context, ops []engine.Op) bool {
	if len(ops) != 1 || ops[0].Kind.IsP2P() || ops[0].Count == 0 || b.zc != nil && b.allowed.Has(algo.ZeroCopy) {
		return false
	}
	o := &ops[0]
	n, err := b.schedules(o)
	if err != nil || n != 1 {
		return false // the run reports the error; several channels run on goroutines of their own
	}
	sc := &b.chans[0].sched
	if sc.lead < 0 || !b.ready(sc.peers) || !b.roomFor(sc.plan.Steps[:sc.lead]) {
		return false
	}
	x, combine, post, err := b.operands(o)
	if err != nil {
		return false // the run reports it
	}
	d := opdesc.Coll(o, b.collSeq)
	b.collSeq++
	r := b.load(ctx, 0, x, d, combine)
	b.coll = begun{o: x, name: o, post: post, rest: sc.plan.Steps[sc.lead:], err: r.Steps(sc.plan.Steps[:sc.lead])}
	return true
}

// finishCollective runs the rest of the collective startCollective
// began and returns its error.
func (b *Backend) finishCollective() error {
	c := &b.coll
	defer func() { *c = begun{} }()
	err := c.err
	if err == nil {
		err = b.chans[0].runner.Steps(c.rest)
	}
	err = b.chans[0].runner.End(err)
	if err == nil {
		err = b.epilogue(c.o, c.post)
	}
	return collErr(c.name, err)
}

// ready reports whether every peer but this rank is connected, without
// waiting.
func (b *Backend) ready(peers []int) bool {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	return b.connected(peers, 1)
}

// roomFor reports whether sends, each to its step's peer, all fit in
// their connections' buffers now, so that none waits.
func (b *Backend) roomFor(sends []algo.Step) bool {
	for i, s := range sends {
		b.sizes = b.sizes[:0]
		for _, t := range sends[i:] {
			if t.To == s.To {
				b.sizes = append(b.sizes, t.Len)
			}
		}
		if !b.fits(s.To, b.sizes) {
			return false
		}
	}
	return true
}

// fits reports whether messages of the given sizes (empty ones are not
// sent) to peer fit in its connection's buffer now, one after the other
// (transport.Buffered), so that none waits.
func (b *Backend) fits(peer int, sizes []int) bool {
	buf, ok := b.conns[0][peer].send.(transport.Buffered)
	if !ok {
		return false
	}
	need := 0
	for _, n := range sizes {
		if n > 0 {
			need += buf.Takes(n)
		}
	}
	return need <= buf.Free()
}
