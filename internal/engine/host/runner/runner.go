package runner

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

// Combine computes dst = a ⊕ b element-wise; dst may alias a or b.
type Combine func(dst, a, b []byte) error

// Peer is this rank's connections to one peer on the runner's channel,
// and what was last heard from it.
type Peer interface {
	// Conns returns the connection to send to the peer and the one to
	// receive from it.
	Conns() (send, recv transport.Conn)
	// Heard records that a message of d came from the peer.
	Heard(d opdesc.Desc)
	// Note says what this rank last heard from the peer, for an operation
	// labelled cur (opdesc.Desc.Label).
	Note(cur string) string
}

// Setup is what a runner runs one plan with (Runner.Reset copies it).
type Setup[P Peer] struct {
	Me       int         // this rank
	Desc     opdesc.Desc // the operation: what received messages must say, and sent ones say
	Conns    []P         // by peer rank; every peer of the plan connected
	Sends    map[int]int // CountSends of the plan's steps
	ElemSize int         // bytes per element (a transport's piece may split one)
	Combine  Combine     // the reduction; nil for a plan that does not reduce

	Send, Recv, Scratch []byte // the buffers the steps refer to (algo.SendBuf, RecvBuf, ScratchBuf)
}

// Runner executes one plan of this rank over host memory. A send that its
// connection buffers now without waiting (transport.Buffered: a short
// message on a network connection, one that fits a shared-memory ring) is
// sent on the runner's goroutine, with no hand-off; the others are posted to
// one goroutine per peer, started on the first such send, and complete when
// the peer has taken the bytes (a peer's later sends follow them there, in
// order); receives block; before a step writes a range it waits for the
// posted sends that still read that range. The zero value is ready for
// Reset; a runner is meant to be kept from one plan to the next.
type Runner[P Peer] struct {
	parent  context.Context // the launch's
	ctx     context.Context // parent, or a child of it once a sender goroutine runs
	cancel  context.CancelFunc
	conns   []P
	es      int
	combine Combine
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

// recvState is the receive in progress (Runner.recv): where its pieces go.
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

// Reset prepares r, kept by its channel from one plan to the next, for a
// plan run with s; s.Sends[p] is how many sends the steps make to peer p,
// so that posting never blocks. Its context is ctx until a send is posted
// to a sender goroutine (post), which makes the cancellable child that
// stops those goroutines: the runner's own waits are ended by nothing else.
func (r *Runner[P]) Reset(ctx context.Context, s Setup[P]) {
	r.parent, r.ctx, r.cancel = ctx, ctx, nil
	r.conns, r.es, r.combine, r.sends = s.Conns, s.ElemSize, s.Combine, s.Sends
	r.me, r.desc, r.wire = s.Me, s.Desc, s.Desc.Wire()
	r.bufs[algo.SendBuf], r.bufs[algo.RecvBuf], r.bufs[algo.ScratchBuf] = s.Send, s.Recv, s.Scratch
	if r.senders == nil {
		r.senders = map[int]chan *sendReq{}
		r.acceptF, r.pieceF = r.accept, r.piece
	}
	clear(r.senders)
	clear(r.pending)
	r.pending, r.waits = r.pending[:0], nil
}

// stop cancels the sender goroutines' context, if there is one.
func (r *Runner[P]) stop() {
	if r.cancel != nil {
		r.cancel()
	}
}

// CountSends returns how many sends steps post to each peer.
func CountSends(steps []algo.Step) map[int]int {
	m := map[int]int{}
	for _, s := range steps {
		if s.Op.Sends() {
			m[s.To]++
		}
	}
	return m
}

// Run executes the steps, then waits for every posted send.
func (r *Runner[P]) Run(steps []algo.Step) error {
	return r.End(r.Steps(steps))
}

// End waits for every posted send once the steps ran (err: their
// failure) and returns the plan's error.
func (r *Runner[P]) End(err error) error {
	if err != nil {
		r.stop()
	}
	err = errs.First(err, r.finish())
	if w := opdesc.Merge(append([]error{err}, r.waits...)...); w != nil {
		return w // every peer this rank was waiting for when time ran out
	}
	return err
}

// Steps executes the steps, leaving the sends they posted to End.
func (r *Runner[P]) Steps(steps []algo.Step) error {
	for _, s := range steps {
		if err := r.step(s); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner[P]) at(ref algo.Ref, n int) []byte { return r.bufs[ref.Buf][ref.Off : ref.Off+n] }

func (r *Runner[P]) step(s algo.Step) error {
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
func (r *Runner[P]) recv(peer int, dst, src []byte) error {
	r.rx = recvState{peer: peer, n: len(dst), dst: dst, src: src, reduce: src != nil, carry: r.rx.carry[:0]}
	_, c := r.conns[peer].Conns()
	err := c.Recv(r.ctx, r.acceptF, r.pieceF)
	if r.rx.refused {
		c.Fail(err) // the sender's Send fails with it too
		return err
	}
	return r.waited(errs.WrapPeer(err, peer, "receiving from"), peer, func() string { return r.conns[peer].Note(r.desc.Label()) })
}

// accept checks the descriptor of the message recv receives.
func (r *Runner[P]) accept(w transport.Desc, got int) error {
	x := &r.rx
	err := r.desc.Check(r.me, x.peer, w, got, x.n)
	x.refused = err != nil
	if err == nil {
		r.conns[x.peer].Heard(r.desc)
	}
	return err
}

// piece takes a piece of the message recv receives, whole elements at a
// time, carrying a split one over to the next piece.
func (r *Runner[P]) piece(p []byte) error {
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
func (r *Runner[P]) consume(p []byte) error {
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
func (r *Runner[P]) waited(err error, peer int, note func() string) error {
	if gccl.Code(err) != gccl.TimeoutError {
		return err
	}
	return opdesc.Waiting(r.desc.String(), peer, note(), err)
}

// send sends p to peer here when its connection buffers it now without
// waiting and no earlier send to peer is still posted, else posts it.
func (r *Runner[P]) send(peer int, p []byte) error {
	c, _ := r.conns[peer].Conns()
	if buf, ok := c.(transport.Buffered); ok && r.senders[peer] == nil && buf.Takes(len(p)) <= buf.Free() {
		return r.waited(errs.WrapPeer(c.Send(r.ctx, r.wire, p), peer, "sending to"), peer, opdesc.SendNote)
	}
	r.post(peer, p)
	return nil
}

// post queues p for peer's sender goroutine, starting it on the first
// post; the queue holds every send the steps make to peer, so this never
// blocks.
func (r *Runner[P]) post(peer int, p []byte) {
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

func (r *Runner[P]) sendLoop(peer int, q chan *sendReq) {
	defer r.wg.Done()
	c, _ := r.conns[peer].Conns()
	for req := range q {
		if err := r.ctx.Err(); err != nil {
			req.err = errs.Ctx(r.ctx, "sending")
		} else {
			req.err = r.waited(errs.WrapPeer(c.Send(r.ctx, r.wire, req.p), peer, "sending to"), peer, opdesc.SendNote)
		}
		close(req.done)
	}
}

// waitWriters waits for the posted sends whose bytes overlap w, and drops
// completed sends from the pending list.
func (r *Runner[P]) waitWriters(w []byte) error {
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

func (r *Runner[P]) wait(req *sendReq) error {
	select {
	case <-req.done:
		return req.err
	case <-r.ctx.Done():
		return r.waited(errs.Ctx(r.ctx, "waiting for a send"), req.peer, opdesc.SendNote)
	}
}

// finish waits for every posted send and stops the sender goroutines.
func (r *Runner[P]) finish() error {
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
