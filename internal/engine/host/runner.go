package host

import (
	"context"
	"sync"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/transport"
)

// combineFunc computes dst = a ⊕ b element-wise; dst may alias a or b.
type combineFunc func(dst, a, b []byte) error

// runner executes one plan of this rank over host memory. A send that its
// connection buffers now without waiting (transport.Buffered: a short
// message on a network connection, one that fits a shared-memory ring) is
// sent on the runner's goroutine, with no hand-off; the others are posted to
// one goroutine per peer, started on the first such send, and complete when
// the peer has taken the bytes (a peer's later sends follow them there, in
// order); receives block; before a step writes a range it waits for the
// posted sends that still read that range.
type runner struct {
	parent  context.Context // the launch's
	ctx     context.Context // parent, or a child of it once a sender goroutine runs
	cancel  context.CancelFunc
	conns   []*peerConn
	es      int
	combine combineFunc
	bufs    [4][]byte      // indexed by algo.Buffer
	me      int            // this rank
	desc    opdesc.Desc    // the operation: what received messages must say
	wire    transport.Desc // desc as every sent message carries it

	sends   map[int]int // sends the steps make to each peer
	senders map[int]chan *sendReq
	wg      sync.WaitGroup
	pending []*sendReq
	waits   []error // the timed-out waits of sends (opdesc.WaitError)

	rx      recvState
	acceptF func(transport.Desc, int) error // r.accept, bound once
	pieceF  func([]byte) error              // r.piece, bound once
}

// recvState is the receive in progress (runner.recv): where its pieces go.
type recvState struct {
	peer, n, off int
	dst, src     []byte // reduce: dst = src ⊕ received; else dst = received
	reduce       bool
	carry        []byte // a piece's split element; storage reused
	refused      bool
}

type sendReq struct {
	peer int
	p    []byte
	done chan struct{}
	err  error
}

// reset prepares r, kept by its channel from one collective to the next,
// for a plan; sends[p] is how many sends the steps make to peer p, so that
// posting never blocks. Its context is ctx until a send is posted to a
// sender goroutine (post), which makes the cancellable child that stops
// those goroutines: the runner's own waits are ended by nothing else.
func (r *runner) reset(ctx context.Context, conns []*peerConn, es int, combine combineFunc, sends map[int]int) {
	r.parent, r.ctx, r.cancel = ctx, ctx, nil
	r.conns, r.es, r.combine, r.sends = conns, es, combine, sends
	if r.senders == nil {
		r.senders = map[int]chan *sendReq{}
		r.acceptF, r.pieceF = r.accept, r.piece
	}
	clear(r.senders)
	clear(r.pending)
	r.pending, r.waits = r.pending[:0], nil
}

// stop cancels the sender goroutines' context, if there is one.
func (r *runner) stop() {
	if r.cancel != nil {
		r.cancel()
	}
}

// countSends returns how many sends steps post to each peer.
func countSends(steps []algo.Step) map[int]int {
	m := map[int]int{}
	for _, s := range steps {
		if s.Op.Sends() {
			m[s.To]++
		}
	}
	return m
}

// run executes the steps, then waits for every posted send.
func (r *runner) run(steps []algo.Step) error {
	return r.end(r.steps(steps))
}

// end waits for every posted send once the steps ran (err: their
// failure) and returns the plan's error.
func (r *runner) end(err error) error {
	if err != nil {
		r.stop()
	}
	err = errs.First(err, r.finish())
	if w := opdesc.Merge(append([]error{err}, r.waits...)...); w != nil {
		return w // every peer this rank was waiting for when time ran out
	}
	return err
}

func (r *runner) steps(steps []algo.Step) error {
	for _, s := range steps {
		if err := r.step(s); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) at(ref algo.Ref, n int) []byte { return r.bufs[ref.Buf][ref.Off : ref.Off+n] }

func (r *runner) step(s algo.Step) error {
	var dst []byte
	if s.Op.Writes() {
		dst = r.at(s.Dst, s.Len)
		if s.Op == algo.Copy && addr(r.at(s.Src, s.Len)) == addr(dst) {
			// In place: the copy writes nothing, so no posted send of these
			// bytes need finish first. Waiting would make every rank of an
			// in-place direct AllGather wait for its sends before its first
			// receive, and a send completes only once the transport holds
			// it: a cycle once a rank's part outgrows the shared-memory
			// ring (GCCL_BUFFSIZE) or the sockets' buffers (issue 16).
			return nil
		}
		if err := r.waitWriters(dst); err != nil {
			return err
		}
	}
	switch s.Op {
	case algo.Send:
		return r.send(s.To, r.at(s.Src, s.Len))
	case algo.Copy:
		copy(dst, r.at(s.Src, s.Len))
		return nil
	case algo.LocalReduce:
		return r.combine(dst, dst, r.at(s.Src, s.Len))
	case algo.Recv, algo.RecvCopySend:
		if err := r.recv(s.From, dst, nil); err != nil {
			return err
		}
	case algo.RecvReduce, algo.RecvReduceSend:
		if err := r.recv(s.From, dst, r.at(s.Src, s.Len)); err != nil {
			return err
		}
	}
	if s.Op.Sends() {
		return r.send(s.To, dst)
	}
	return nil
}

// recv receives len(dst) bytes from peer into dst, or, with src, their
// combination with src (dst = src ⊕ received), element by element (pieces
// of the transport may split an element).
func (r *runner) recv(peer int, dst, src []byte) error {
	r.rx = recvState{peer: peer, n: len(dst), dst: dst, src: src, reduce: src != nil, carry: r.rx.carry[:0]}
	c := r.conns[peer].recv
	err := c.Recv(r.ctx, r.acceptF, r.pieceF)
	if r.rx.refused {
		c.Fail(err) // the sender's Send fails with it too
		return err
	}
	return r.waited(wrapPeer(err, peer, "receiving from"), peer, func() string { return r.conns[peer].note(r.desc.Label()) })
}

// accept checks the descriptor of the message recv receives.
func (r *runner) accept(w transport.Desc, got int) error {
	x := &r.rx
	err := r.desc.Check(r.me, x.peer, w, got, x.n)
	x.refused = err != nil
	if err == nil {
		r.conns[x.peer].heard(r.desc)
	}
	return err
}

// piece takes a piece of the message recv receives, whole elements at a
// time, carrying a split one over to the next piece.
func (r *runner) piece(p []byte) error {
	x := &r.rx
	if len(x.carry) > 0 {
		k := min(r.es-len(x.carry), len(p))
		x.carry = append(x.carry, p[:k]...)
		p = p[k:]
		if len(x.carry) < r.es {
			return nil
		}
		if err := r.consume(x.carry); err != nil {
			return err
		}
		x.carry = x.carry[:0]
	}
	whole := len(p) - len(p)%r.es
	if whole > 0 {
		if err := r.consume(p[:whole]); err != nil {
			return err
		}
	}
	x.carry = append(x.carry, p[whole:]...)
	return nil
}

// consume puts whole elements p at the receive's current offset.
func (r *runner) consume(p []byte) error {
	x := &r.rx
	off := x.off
	x.off += len(p)
	if !x.reduce {
		copy(x.dst[off:], p)
		return nil
	}
	return r.combine(x.dst[off:off+len(p)], x.src[off:off+len(p)], p)
}

// waited makes a timeout of a wait on peer an opdesc.WaitError with note,
// which it formats only then (labels cost a Sprintf: not per message).
func (r *runner) waited(err error, peer int, note func() string) error {
	if gccl.Code(err) != gccl.TimeoutError {
		return err
	}
	return opdesc.Waiting(r.desc.String(), peer, note(), err)
}

// sendNote is the note on a peer that did not take this rank's data.
func sendNote() string { return "it has not taken this rank's data (its receive buffer is full)" }

// send sends p to peer here when its connection buffers it now without
// waiting and no earlier send to peer is still posted, else posts it.
func (r *runner) send(peer int, p []byte) error {
	c := r.conns[peer].send
	if buf, ok := c.(transport.Buffered); ok && r.senders[peer] == nil && buf.Takes(len(p)) <= buf.Free() {
		return r.waited(wrapPeer(c.Send(r.ctx, r.wire, p), peer, "sending to"), peer, sendNote)
	}
	r.post(peer, p)
	return nil
}

// post queues p for peer's sender goroutine, starting it on the first
// post; the queue holds every send the steps make to peer, so this never
// blocks.
func (r *runner) post(peer int, p []byte) {
	q := r.senders[peer]
	if q == nil {
		if r.cancel == nil {
			r.ctx, r.cancel = context.WithCancel(r.parent)
		}
		q = make(chan *sendReq, r.sends[peer])
		r.senders[peer] = q
		r.wg.Add(1)
		go r.sendLoop(peer, q)
	}
	req := &sendReq{peer: peer, p: p, done: make(chan struct{})}
	r.pending = append(r.pending, req)
	q <- req
}

func (r *runner) sendLoop(peer int, q chan *sendReq) {
	defer r.wg.Done()
	c := r.conns[peer].send
	for req := range q {
		if err := r.ctx.Err(); err != nil {
			req.err = errs.Ctx(r.ctx, "sending")
		} else {
			req.err = r.waited(wrapPeer(c.Send(r.ctx, r.wire, req.p), peer, "sending to"), peer, sendNote)
		}
		close(req.done)
	}
}

// waitWriters waits for the posted sends whose bytes overlap w, and drops
// completed sends from the pending list.
func (r *runner) waitWriters(w []byte) error {
	lo, hi := addr(w), addr(w)+uintptr(len(w))
	keep := r.pending[:0]
	for _, req := range r.pending {
		plo := addr(req.p)
		if plo < hi && lo < plo+uintptr(len(req.p)) {
			if err := r.wait(req); err != nil {
				return err
			}
			continue
		}
		select {
		case <-req.done:
			if req.err != nil {
				return req.err
			}
		default:
			keep = append(keep, req)
		}
	}
	clear(r.pending[len(keep):])
	r.pending = keep
	return nil
}

func (r *runner) wait(req *sendReq) error {
	select {
	case <-req.done:
		return req.err
	case <-r.ctx.Done():
		return r.waited(errs.Ctx(r.ctx, "waiting for a send"), req.peer, sendNote)
	}
}

// finish waits for every posted send and stops the sender goroutines.
func (r *runner) finish() error {
	var err error
	for _, req := range r.pending {
		werr := r.wait(req)
		if werr != nil && opdesc.Merge(werr) != nil {
			r.waits = append(r.waits, werr)
		}
		err = errs.First(err, werr)
	}
	if err != nil {
		r.stop()
	}
	for _, q := range r.senders {
		close(q)
	}
	r.wg.Wait()
	r.stop()
	return err
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
