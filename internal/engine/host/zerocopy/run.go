package zerocopy

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/futex"
)

// op is one zero-copy collective as this rank sees it: every rank's
// buffers, mapped into this process (nil where a rank does not use one).
type op struct {
	kind    algo.Kind
	copyIn  bool // inputs are the ranks' copy-in areas; each rank computes only its own output
	n, r    int
	root    int
	count   int
	es      int
	send    [][]byte
	recv    [][]byte
	combine func(dst, a, b []byte) error
	post    func([]byte) error
	tmp     []byte
}

// Run runs collective o, whose descriptor is d, with the zero-copy
// algorithm when every rank's buffers are shareable, or through the
// copy-in areas when its input is small; ran false means the caller must
// run a step schedule instead (every rank reaches the same answer).
// combine computes dst = a ⊕ b element-wise (dst may alias a or b); post,
// if not nil, finishes a reduced result in place (Avg's division). A
// failure marks this rank failed in its control block, so that peers
// waiting for it fail at once.
func (z *Path) Run(ctx context.Context, o *engine.Op, d opdesc.Desc, combine func(dst, a, b []byte) error, post func([]byte) error) (ran bool, err error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed {
		return false, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator is closed")
	}
	defer func() {
		if err != nil {
			atomic.StoreUint32(z.own.u32(offFailed), 1)
		}
	}()
	n := len(z.ctl)
	sendSz, recvSz := o.Sizes(n)
	if sendSz <= areaBytes {
		return true, z.runCopyIn(ctx, o, d, z.newOp(o, combine, post))
	}
	parity := z.seq + 1
	z.own.putDesc(parity, 0, describe(o.Send, sendSz))
	z.own.putDesc(parity, 1, describe(o.Recv, recvSz))
	z.own.putOp(parity, d)
	if err := z.barrier(ctx, d); err != nil {
		return false, err
	}
	if err := z.agree(parity, d); err != nil {
		return false, err
	}
	zo := z.newOp(o, combine, post)
	descs := make([][2]bufDesc, n)
	for r := range descs {
		descs[r] = [2]bufDesc{z.ctl[r].getDesc(parity, 0), z.ctl[r].getDesc(parity, 1)}
	}
	if !zo.shareable(descs) {
		return false, nil
	}
	zo.send[z.rank], zo.recv[z.rank] = device.HostBytes(o.Send, sendSz), device.HostBytes(o.Recv, recvSz)
	if err := z.resolve(zo, descs, sendSz, recvSz); err != nil {
		return false, err
	}
	if err := zo.run(); err != nil {
		return false, err
	}
	z.runs++
	return true, z.barrier(ctx, d)
}

// newOp is o as this rank runs it, its buffers not yet resolved: z.op,
// reused (z.mu is held while an operation runs), so that it allocates
// nothing.
func (z *Path) newOp(o *engine.Op, combine func(dst, a, b []byte) error, post func([]byte) error) *op {
	n := len(z.ctl)
	send, recv := z.op.send, z.op.recv
	if len(send) != n {
		send, recv = make([][]byte, n), make([][]byte, n)
	}
	clear(send)
	clear(recv)
	z.op = op{kind: o.Kind, n: n, r: z.rank, root: o.Root, count: o.Count, es: o.Type.Size(),
		send: send, recv: recv, combine: combine, post: post, tmp: z.tmp}
	return &z.op
}

// runCopyIn runs a small operation through the copy-in areas: each rank
// copies its input into its own area, all meet at one barrier, and each
// rank computes its own output from every area. One barrier suffices: an
// area is written again two operations later, after a barrier every peer
// reaches only once done reading it. Any host memory works: nothing of the
// user's is mapped.
func (z *Path) runCopyIn(ctx context.Context, o *engine.Op, d opdesc.Desc, zo *op) error {
	sendSz, recvSz := o.Sizes(zo.n)
	parity := z.seq + 1
	if o.Kind != algo.Broadcast || z.rank == o.Root {
		copy(z.own.area(parity), device.HostBytes(o.Send, sendSz))
	}
	z.own.putOp(parity, d)
	if err := z.barrier(ctx, d); err != nil {
		return err
	}
	if err := z.agree(parity, d); err != nil {
		return err
	}
	zo.copyIn = true
	for r := range zo.send {
		zo.send[r] = z.ctl[r].area(parity)[:sendSz]
	}
	zo.recv[z.rank] = device.HostBytes(o.Recv, recvSz)
	if err := zo.run(); err != nil {
		return err
	}
	z.runs++
	z.copyIns++
	return nil
}

// shareable reports whether every buffer the kind reads or writes remotely
// is mapped shared memory (the same answer on every rank: it reads only
// what every rank published).
func (zo *op) shareable(d [][2]bufDesc) bool {
	for r := range d {
		needSend, needRecv := zo.needs(r)
		if needSend && !d[r][0].ok || needRecv && !d[r][1].ok {
			return false
		}
	}
	return true
}

// needs says which of rank r's buffers the zero-copy schedule of the kind
// touches (its own or a peer's); buffers only their owner touches are
// viewed directly and need not be shared.
func (zo *op) needs(r int) (send, recv bool) {
	switch zo.kind {
	case algo.AllReduce:
		return true, true
	case algo.Reduce:
		return true, r == zo.root
	case algo.Broadcast:
		return r == zo.root, false
	}
	return true, false // AllGather, ReduceScatter: each rank pulls into its own recv
}

// resolve maps the peers' buffers the schedule needs and views them as
// slices.
func (z *Path) resolve(zo *op, d [][2]bufDesc, sendSz, recvSz int) error {
	for r := range d {
		if r == z.rank {
			continue
		}
		needSend, needRecv := zo.needs(r)
		for i, need := range [2]bool{needSend, needRecv} {
			size := [2]int{sendSz, recvSz}[i]
			if !need || size == 0 {
				continue
			}
			if size > d[r][i].size-d[r][i].off { // off <= size: no overflow
				return gccl.Errorf(gccl.RemoteError, "peer", "rank %d published a %d-byte buffer at offset %d of a %d-byte region", r, size, d[r][i].off, d[r][i].size)
			}
			p, err := z.maps[r].resolve(d[r][i])
			if err != nil {
				return gccl.Errorf(gccl.Code(err), "peer", "mapping the buffer of rank %d: %w", r, err)
			}
			if i == 0 {
				zo.send[r] = device.HostBytes(p, size)
			} else {
				zo.recv[r] = device.HostBytes(p, size)
			}
		}
	}
	return nil
}

// agree checks, after the operation's first barrier, that every peer
// published the descriptor of the same operation: ranks that disagree fail
// there, all of them, before any byte is used.
func (z *Path) agree(parity uint32, d opdesc.Desc) error {
	for r, c := range z.ctl {
		if r == z.rank {
			continue
		}
		if got := c.op(parity); got != d {
			return opdesc.Mismatch(z.rank, r, got, d)
		}
	}
	return nil
}

// barrier arrives at the next barrier of operation d and waits for every
// peer to arrive. A timeout is an opdesc.WaitError naming every peer that
// has not arrived.
func (z *Path) barrier(ctx context.Context, d opdesc.Desc) error {
	z.seq++
	z.own.seq().Advance(z.seq)
	deadline, _ := ctx.Deadline()
	w := barrierWait{z: z, ctx: ctx, deadline: deadline} // on the stack: Await keeps no reference
	for r := range z.ctl {
		if r == z.rank {
			continue
		}
		w.r = r
		if err := z.ctl[r].seq().Await(z.seq, w.check); err != nil {
			if gccl.Code(err) == gccl.TimeoutError {
				return z.missing(d, r, err)
			}
			return err
		}
	}
	return nil
}

// missing is the WaitError of a barrier of d that timed out: the peers
// that have not arrived, each with the last barrier it reached.
func (z *Path) missing(d opdesc.Desc, waited int, err error) error {
	w := &opdesc.WaitError{Op: d.String(), Notes: map[int]string{}, Err: err}
	for r := range z.ctl {
		if r == z.rank {
			continue
		}
		if at := atomic.LoadUint32(z.ctl[r].seq().Seq); !futex.Reached(at, z.seq) {
			w.Peers = append(w.Peers, r)
			w.Notes[r] = fmt.Sprintf("it has not arrived at %s's zero-copy barrier (%d barriers behind this rank)", d.Label(), z.seq-at)
		}
	}
	if len(w.Peers) == 0 { // it arrived just after the deadline
		w.Peers, w.Notes[waited] = []int{waited}, "it arrived at the barrier just after the deadline"
	}
	return w
}

// barrierWait is a barrier's wait for peer r.
type barrierWait struct {
	z        *Path
	ctx      context.Context
	r        int
	deadline time.Time
	lastLive time.Time
}

// check is the check of the wait (futex.Counter.Await): the peer's
// failure flag, the context, the deadline and (every few milliseconds)
// whether the peer's process still runs. It formats only the error it
// returns.
func (w *barrierWait) check() error {
	c := w.z.ctl[w.r]
	if c.failed() {
		return gccl.Errorf(gccl.RemoteError, "peer", "rank %d failed a zero-copy operation", w.r)
	}
	if w.ctx.Err() != nil {
		return errs.Ctx(w.ctx, w.doing())
	}
	now := time.Now()
	if !w.deadline.IsZero() && now.After(w.deadline) {
		return errs.Expired(w.doing())
	}
	if now.Sub(w.lastLive) > 10*time.Millisecond {
		w.lastLive = now
		if pid := c.pid(); pid != 0 && syscall.Kill(int(pid), 0) == syscall.ESRCH {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d (process %d) is gone", w.r, pid)
		}
	}
	return nil
}

func (w *barrierWait) doing() string {
	return fmt.Sprintf("waiting for rank %d at a zero-copy barrier", w.r)
}
