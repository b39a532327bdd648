package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/transport"
)

// runSendRecv runs point-to-point ops: one lane per peer and direction
// takes that peer's ops in issue order (so the k-th send to a peer
// matches the peer's k-th receive), and all peers progress at once, so
// all-to-all patterns cannot deadlock. Sends to self are matched with
// receives from self by order and copied.
//
// When every send fits in its connection's buffer now (small messages
// over shared memory: transport.Buffered) no send waits for a peer, so
// the lanes run one after the other on this goroutine, sends first: a
// receive then waits only for peers' sends, which wait for nothing this
// rank does later, and no goroutine is started or woken. That is for
// launches of at most inlineBytes; otherwise, and when a send does not
// fit, every lane but the last runs on a goroutine of its own, and the
// lanes' copies run on as many cores.
func (b *Backend) runSendRecv(ctx context.Context, ops []engine.Op) error {
	if len(ops) == 0 {
		return nil
	}
	pr := &b.p2p
	pr.sort(ops, b.rank)
	if err := copySelf(pr.self[1], pr.self[0]); err != nil {
		return err
	}
	if err := b.connect(ctx, func() string { return p2pName(ops) }, pr.peers, 1); err != nil {
		return err
	}
	b.bound(ctx)
	if b.fitsNow(pr.lanes) {
		b.runInline(pr, false)
	} else {
		b.runConcurrently(pr)
	}
	return b.endLanes(ops)
}

// startSendRecv is the first half of runSendRecv for a launch of
// point-to-point ops only whose lanes would run inline, its peers
// connected: it runs the sending lanes (none waits) and reports true;
// finishSendRecv then runs the receiving ones. For any other launch it
// does nothing and reports false.
func (b *Backend) startSendRecv(ctx context.Context, ops []engine.Op) bool {
	if len(ops) == 0 {
		return false
	}
	for i := range ops {
		if !ops[i].Kind.IsP2P() {
			return false
		}
	}
	pr := &b.p2p
	pr.sort(ops, b.rank)
	if !b.ready(pr.peers) || !b.fitsNow(pr.lanes) {
		return false
	}
	if pr.err = copySelf(pr.self[1], pr.self[0]); pr.err == nil {
		b.bound(ctx)
		b.runInline(pr, true)
	}
	return true
}

// receiving reports whether lanes are left to run after startSendRecv.
func (pr *p2pRun) receiving() bool { return pr.err == nil && pr.next < len(pr.lanes) }

// finishSendRecv runs the lanes that startSendRecv left and returns the
// launch's error.
func (b *Backend) finishSendRecv(ops []engine.Op) error {
	if b.p2p.err != nil {
		return b.p2p.err
	}
	b.runInline(&b.p2p, false)
	return b.endLanes(ops)
}

// bound bounds the lanes by ctx: its deadline, else the backend's
// timeout from now (endLanes releases the bound).
func (b *Backend) bound(ctx context.Context) {
	pr := &b.p2p
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(b.timeout)
	}
	pr.scope.Reset(ctx, deadline) // one lane's failure cancels its siblings
}

// endLanes releases the lanes' bound and returns their error.
func (b *Backend) endLanes(ops []engine.Op) error {
	pr := &b.p2p
	pr.scope.Release()
	errList := pr.errs[:0]
	for _, l := range pr.lanes {
		errList = append(errList, l.err)
	}
	pr.errs = errList
	if !slices.ContainsFunc(errList, func(err error) bool { return err != nil }) {
		return nil // no name formatted on the success path
	}
	return laneErr(p2pName(ops), errList)
}

// laneErr is a group's error from its lanes' errors: the waits that
// timed out, merged (stall.go names the ranks), else the first failure.
// A lane cancelled because a sibling failed did not stall.
func laneErr(name string, list []error) error {
	var live []error
	for _, err := range list {
		if err != nil && !errors.Is(err, context.Canceled) {
			live = append(live, err)
		}
	}
	if w := opdesc.Merge(live...); w != nil {
		w.Op = name // every peer a lane was waiting for
		return w
	}
	return causeErr(list...)
}

// p2pLane is a launch's ops with one peer in one direction, in issue order.
type p2pLane struct {
	peer int
	send bool
	ops  []*engine.Op
	err  error
	recv p2pRecv // a receiving lane's current op
}

// p2pRun is a backend's state for running a launch's point-to-point ops,
// kept between launches so that a launch allocates nothing; used under
// the engine's issue order only (as Backend.chans).
type p2pRun struct {
	lanes []*p2pLane      // sends first, each direction in the order of its first op
	next  int             // the first lane runInline has not run
	err   error           // the sends to self did not match the receives from self
	self  [2][]*engine.Op // receives from and sends to self
	peers []int           // the lanes' peers
	errs  []error         // the lanes' errors, for opdesc.Merge
	scope wait.Scope      // the lanes' bound: the launch's, and cancelled by a failing lane
	wg    sync.WaitGroup
}

// sort puts ops into lanes (reusing their storage) and the self lists.
func (pr *p2pRun) sort(ops []engine.Op, rank int) {
	for _, l := range pr.lanes {
		clear(l.ops)
		l.ops, l.err = l.ops[:0], nil
	}
	pr.lanes, pr.peers, pr.next, pr.err = pr.lanes[:0], pr.peers[:0], 0, nil
	clear(pr.self[0])
	clear(pr.self[1])
	pr.self[0], pr.self[1] = pr.self[0][:0], pr.self[1][:0]
	for _, sends := range []bool{true, false} {
		for i := range ops {
			o := &ops[i]
			if (o.Kind == algo.P2PSend) != sends {
				continue
			}
			if o.Peer == rank {
				k := 0
				if sends {
					k = 1
				}
				pr.self[k] = append(pr.self[k], o)
				continue
			}
			l := pr.lane(o.Peer, sends)
			l.ops = append(l.ops, o)
		}
	}
}

// lane returns the lane of peer and direction, adding it if new.
func (pr *p2pRun) lane(peer int, send bool) *p2pLane {
	for _, l := range pr.lanes {
		if l.peer == peer && l.send == send {
			return l
		}
	}
	if n := len(pr.lanes); n < cap(pr.lanes) && pr.lanes[:n+1][n] != nil {
		pr.lanes = pr.lanes[:n+1] // a lane of an earlier launch
	} else {
		pr.lanes = append(pr.lanes, newLane())
	}
	l := pr.lanes[len(pr.lanes)-1]
	l.peer, l.send = peer, send
	pr.peers = append(pr.peers, peer)
	return l
}

// newLane makes a lane whose receive callbacks are bound once, so that
// receiving allocates nothing.
func newLane() *p2pLane {
	l := &p2pLane{}
	l.recv.accept, l.recv.consume = l.recv.check, l.recv.copyIn
	return l
}

// inlineBytes is the most bytes (sent and received) of a launch whose
// lanes run one after the other: what one core copies in a few tens of
// µs, less than lanes on goroutines of their own cost in wake-ups and
// hand-offs (tens of µs a futex wake-up on a busy host,
// docs/perf-notes.md). A 2x2 halo of 64 KiB faces (512 KiB moved) took
// 117 µs on lanes of their own on 16 cores, against 73-85 µs for Open
// MPI, which copies in one progress engine; 1 MiB covers faces up to
// 128 KiB. Larger launches copy on several cores.
const inlineBytes = 1 << 20

// fitsNow reports whether the lanes move at most inlineBytes and every
// send fits in its connection's buffer now (transport.Buffered), so that
// none waits.
func (b *Backend) fitsNow(lanes []*p2pLane) bool {
	total := 0
	for _, l := range lanes {
		for _, o := range l.ops {
			total += o.Count * o.Type.Size()
		}
	}
	if total > inlineBytes {
		return false
	}
	for _, l := range lanes {
		if !l.send {
			continue
		}
		b.sizes = b.sizes[:0]
		for _, o := range l.ops {
			b.sizes = append(b.sizes, o.Count*o.Type.Size())
		}
		if !b.fits(l.peer, b.sizes) {
			return false
		}
	}
	return true
}

// runInline runs the lanes from pr.next in order on this goroutine
// (fitsNow: the sends come first and none waits), the sending ones only
// with sendsOnly. After a lane timed out the later ones still run,
// against the passed deadline: they take what has arrived and time out on
// the peers that sent nothing, so the error names every peer this rank
// waited for, as with concurrent lanes. Any other failure ends the run.
func (b *Backend) runInline(pr *p2pRun, sendsOnly bool) {
	for ; pr.next < len(pr.lanes); pr.next++ {
		l := pr.lanes[pr.next]
		if sendsOnly && !l.send {
			return
		}
		if l.err = b.runLane(&pr.scope, l); l.err != nil && gccl.Code(l.err) != gccl.TimeoutError {
			pr.next = len(pr.lanes)
			return
		}
	}
}

// runConcurrently runs every lane but the last on a goroutine of its own,
// the last on this one (a lone Send or Recv starts no goroutine). A lane
// that fails cancels the others.
func (b *Backend) runConcurrently(pr *p2pRun) {
	run := func(l *p2pLane) {
		if l.err = b.runLane(&pr.scope, l); l.err != nil {
			pr.scope.Cancel()
		}
	}
	last := len(pr.lanes) - 1
	for i := range last {
		pr.wg.Go(func() { run(pr.lanes[i]) })
	}
	if last >= 0 {
		run(pr.lanes[last])
	}
	pr.wg.Wait()
}

// runLane runs a lane's ops in order and returns the first error.
func (b *Backend) runLane(ctx context.Context, l *p2pLane) error {
	for _, o := range l.ops {
		if err := b.sendRecvOne(ctx, o, &l.recv); err != nil {
			return err
		}
	}
	return nil
}

// p2pName names a launch's point-to-point ops in errors.
func p2pName(ops []engine.Op) string {
	if len(ops) == 1 {
		return p2pOne(&ops[0])
	}
	return fmt.Sprintf("a group of %d sends and receives (%s, ...)", len(ops), p2pOne(&ops[0]))
}

func p2pOne(o *engine.Op) string {
	if o.Kind == algo.P2PSend {
		return fmt.Sprintf("Send(%d %v) to rank %d", o.Count, o.Type, o.Peer)
	}
	return fmt.Sprintf("Recv(%d %v) from rank %d", o.Count, o.Type, o.Peer)
}

// causeErr is the first error that is not a cancellation, else the first
// error: when one lane fails it cancels its siblings, and the failure (a
// dead peer, say), not a sibling's "cancelled while waiting", must reach
// the caller.
func causeErr(list ...error) error {
	for _, err := range list {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errs.First(list...)
}

// sendRecvOne runs one Send or Recv: one message, whose descriptor says
// which op with this peer it is (package opdesc); a Recv refuses a message that
// does not match it (another size, a collective, an op out of order), and
// the sender learns of it. Zero-count ops move nothing but are counted.
// rv is the lane's receive state.
func (b *Backend) sendRecvOne(ctx context.Context, o *engine.Op, rv *p2pRecv) error {
	n := o.Count * o.Type.Size()
	seq := &b.recvSeq[o.Peer]
	if o.Kind == algo.P2PSend {
		seq = &b.sendSeq[o.Peer]
	}
	d := opdesc.P2P(o, b.rank, *seq, b.collSeq)
	*seq++
	if n == 0 {
		return nil
	}
	pc := b.conns[0][o.Peer]
	if o.Kind == algo.P2PSend {
		err := errs.WrapPeer(pc.send.Send(ctx, d.Wire(), device.HostBytes(o.Send, n)), o.Peer, "sending to")
		return p2pWaited(o, err, opdesc.SendNote)
	}
	rv.me, rv.peer, rv.d, rv.pc = b.rank, o.Peer, d, pc
	rv.dst, rv.off, rv.refused = device.HostBytes(o.Recv, n), 0, false
	err := pc.recv.Recv(ctx, rv.accept, rv.consume)
	rv.dst, rv.pc = nil, nil
	if rv.refused {
		pc.recv.Fail(err) // the sender's Send fails with it too
		return err
	}
	return p2pWaited(o, errs.WrapPeer(err, o.Peer, "receiving from"), func() string { return pc.Note("") })
}

// p2pRecv is a Recv in progress: the descriptor its message must carry
// and where its bytes go. Its callbacks are bound once (newLane).
type p2pRecv struct {
	me, peer int
	d        opdesc.Desc
	pc       *peerConn
	dst      []byte
	off      int
	refused  bool
	accept   func(transport.Desc, int) error
	consume  func([]byte) error
}

// check accepts a message that matches the op (opdesc.Desc.Check).
func (rv *p2pRecv) check(w transport.Desc, got int) error {
	err := rv.d.Check(rv.me, rv.peer, w, got, len(rv.dst))
	rv.refused = err != nil
	if err == nil {
		rv.pc.Heard(opdesc.Of(w))
	}
	return err
}

// copyIn copies a piece of the message into place.
func (rv *p2pRecv) copyIn(p []byte) error {
	rv.off += copy(rv.dst[rv.off:], p)
	return nil
}

// p2pWaited makes a timeout of a Send or Recv an opdesc.WaitError, with
// note formatted only then.
func p2pWaited(o *engine.Op, err error, note func() string) error {
	if gccl.Code(err) != gccl.TimeoutError {
		return err
	}
	return opdesc.Waiting(p2pOne(o), o.Peer, note(), err)
}

// copySelf pairs sends to self with receives from self, in order.
func copySelf(sends, recvs []*engine.Op) error {
	if len(sends) != len(recvs) {
		return gccl.Errorf(gccl.InvalidUsage, "peer", "%d sends to self but %d receives from self in one group; pair them", len(sends), len(recvs))
	}
	for i, s := range sends {
		r := recvs[i]
		ns, nr := s.Count*s.Type.Size(), r.Count*r.Type.Size()
		if ns != nr {
			return gccl.Errorf(gccl.InvalidUsage, "count", "send to self of %d bytes matched with a receive of %d bytes", ns, nr)
		}
		copy(device.HostBytes(r.Recv, nr), device.HostBytes(s.Send, ns))
	}
	return nil
}
