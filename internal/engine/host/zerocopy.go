package host

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/errs"
)

// zcOp is one zero-copy collective as this rank sees it: every rank's
// buffers, mapped into this process (nil where a rank does not use one).
type zcOp struct {
	kind    algo.Kind
	copyIn  bool // inputs are the ranks' copy-in areas; each rank computes only its own output
	n, r    int
	root    int
	count   int
	es      int
	send    [][]byte
	recv    [][]byte
	combine combineFunc
	post    func([]byte) error
	tmp     []byte
}

// tryZeroCopy runs o with the zero-copy algorithm when it is allowed and
// every rank's buffers are shareable; ran false means the caller must run
// a step schedule instead (every rank reaches the same answer).
func (b *Backend) tryZeroCopy(ctx context.Context, o *engine.Op, d opDesc, combine combineFunc, post func([]byte) error) (ran bool, err error) {
	z := b.zc
	if z == nil || !b.allowed.Has(algo.ZeroCopy) {
		return false, nil
	}
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
	sendSz, recvSz := o.Sizes(b.nranks)
	if sendSz <= areaBytes {
		return true, b.runCopyIn(ctx, o, d, combine, post)
	}
	parity := z.seq + 1
	z.own.putDesc(parity, 0, describe(o.Send, sendSz))
	z.own.putDesc(parity, 1, describe(o.Recv, recvSz))
	z.own.putOp(parity, d)
	if err := b.zcBarrier(ctx); err != nil {
		return false, err
	}
	if err := b.zcAgree(parity, d); err != nil {
		return false, err
	}
	zo := &zcOp{kind: o.Kind, n: b.nranks, r: b.rank, root: o.Root, count: o.Count, es: o.Type.Size(),
		send: make([][]byte, b.nranks), recv: make([][]byte, b.nranks), combine: combine, post: post, tmp: z.tmp}
	descs := make([][2]bufDesc, b.nranks)
	for r := range descs {
		descs[r] = [2]bufDesc{z.ctl[r].getDesc(parity, 0), z.ctl[r].getDesc(parity, 1)}
	}
	if !zo.shareable(descs) {
		return false, nil
	}
	zo.send[b.rank], zo.recv[b.rank] = hostBytes(o.Send, sendSz), hostBytes(o.Recv, recvSz)
	if err := b.zcResolve(zo, descs, sendSz, recvSz); err != nil {
		return false, err
	}
	if err := zo.run(); err != nil {
		return false, err
	}
	z.runs++
	return true, b.zcBarrier(ctx)
}

// runCopyIn runs a small operation through the copy-in areas: each rank
// copies its input into its own area, all meet at one barrier, and each
// rank computes its own output from every area. One barrier suffices: an
// area is written again two operations later, after a barrier every peer
// reaches only once done reading it. Any host memory works: nothing of the
// user's is mapped.
func (b *Backend) runCopyIn(ctx context.Context, o *engine.Op, d opDesc, combine combineFunc, post func([]byte) error) error {
	z := b.zc
	sendSz, recvSz := o.Sizes(b.nranks)
	parity := z.seq + 1
	kind := o.Kind
	if kind != algo.Broadcast || b.rank == o.Root {
		copy(z.own.area(parity), hostBytes(o.Send, sendSz))
	}
	z.own.putOp(parity, d)
	if err := b.zcBarrier(ctx); err != nil {
		return err
	}
	if err := b.zcAgree(parity, d); err != nil {
		return err
	}
	zo := &zcOp{kind: kind, copyIn: true, n: b.nranks, r: b.rank, root: o.Root, count: o.Count, es: o.Type.Size(),
		send: make([][]byte, b.nranks), recv: make([][]byte, b.nranks), combine: combine, post: post, tmp: z.tmp}
	for r := range zo.send {
		zo.send[r] = z.ctl[r].area(parity)[:sendSz]
	}
	zo.recv[b.rank] = hostBytes(o.Recv, recvSz)
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
func (zo *zcOp) shareable(d [][2]bufDesc) bool {
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
func (zo *zcOp) needs(r int) (send, recv bool) {
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

// zcResolve maps the peers' buffers the schedule needs and views them as
// slices.
func (b *Backend) zcResolve(zo *zcOp, d [][2]bufDesc, sendSz, recvSz int) error {
	for r := range d {
		if r == b.rank {
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
			p, err := b.zc.maps[r].resolve(d[r][i])
			if err != nil {
				return wrapPeer(err, r, "mapping the buffer of")
			}
			if i == 0 {
				zo.send[r] = hostBytes(p, size)
			} else {
				zo.recv[r] = hostBytes(p, size)
			}
		}
	}
	return nil
}

// zcAgree checks, after the operation's first barrier, that every peer
// published the descriptor of the same operation (desc.go): ranks that
// disagree fail there, all of them, before any byte is used.
func (b *Backend) zcAgree(parity uint32, d opDesc) error {
	for r, c := range b.zc.ctl {
		if r == b.rank {
			continue
		}
		if got := c.op(parity); got != d {
			return mismatch(b.rank, r, got, d)
		}
	}
	return nil
}

// zcBarrier arrives at the next barrier and waits for every peer to arrive.
func (b *Backend) zcBarrier(ctx context.Context) error {
	z := b.zc
	z.seq++
	z.own.seq().Advance(z.seq)
	deadline, _ := ctx.Deadline()
	for r := range z.ctl {
		if r == b.rank {
			continue
		}
		if err := z.ctl[r].seq().Await(z.seq, b.zcCheck(ctx, r, deadline)); err != nil {
			return err
		}
	}
	return nil
}

// zcCheck returns the check of a wait for peer r: the context, the
// deadline, the peer's failure flag and (every few milliseconds) whether
// its process still runs.
func (b *Backend) zcCheck(ctx context.Context, r int, deadline time.Time) func() error {
	var lastLive time.Time
	return func() error {
		c := b.zc.ctl[r]
		if c.failed() {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d failed a zero-copy operation", r)
		}
		doing := fmt.Sprintf("waiting for rank %d at a zero-copy barrier", r)
		if ctx.Err() != nil {
			return errs.Ctx(ctx, doing)
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return errs.Expired(doing)
		}
		if now := time.Now(); now.Sub(lastLive) > 10*time.Millisecond {
			lastLive = now
			if pid := c.pid(); pid != 0 && syscall.Kill(int(pid), 0) == syscall.ESRCH {
				return gccl.Errorf(gccl.RemoteError, "peer", "rank %d (process %d) is gone", r, pid)
			}
		}
		return nil
	}
}
