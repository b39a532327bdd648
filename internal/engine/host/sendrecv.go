package host

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/transport"
)

// runSendRecv runs point-to-point ops concurrently: one goroutine per peer and
// direction takes that peer's ops in issue order (so the k-th send to a peer
// matches the peer's k-th receive), and all peers progress at once, so
// all-to-all patterns cannot deadlock. Sends to self are matched with
// receives from self by order and copied.
func (b *Backend) runSendRecv(ctx context.Context, ops []engine.Op) error {
	if len(ops) == 0 {
		return nil
	}
	type lane struct {
		peer int
		send bool
	}
	lanes := map[lane][]*engine.Op{}
	var order []lane
	var selfSend, selfRecv []*engine.Op
	for i := range ops {
		o := &ops[i]
		switch {
		case o.Peer == b.rank && o.Kind == algo.P2PSend:
			selfSend = append(selfSend, o)
		case o.Peer == b.rank:
			selfRecv = append(selfRecv, o)
		default:
			k := lane{o.Peer, o.Kind == algo.P2PSend}
			if _, ok := lanes[k]; !ok {
				order = append(order, k)
			}
			lanes[k] = append(lanes[k], o)
		}
	}
	if err := copySelf(selfSend, selfRecv); err != nil {
		return err
	}
	peers := make([]int, 0, len(order))
	for _, k := range order {
		peers = append(peers, k.peer)
	}
	if err := b.connect(ctx, func() string { return p2pName(ops) }, peers); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errList := make([]error, len(order))
	runLane := func(i int) {
		for _, o := range lanes[order[i]] {
			if errList[i] = b.sendRecvOne(ctx, o); errList[i] != nil {
				cancel()
				return
			}
		}
	}
	// The last lane runs on this goroutine: a launch of one Send or Recv
	// starts no goroutine, and every launch one fewer (each start and end
	// is a hand-off that can cost a wake-up).
	var wg sync.WaitGroup
	for i := range len(order) - 1 {
		wg.Go(func() { runLane(i) })
	}
	if len(order) > 0 {
		runLane(len(order) - 1)
	}
	wg.Wait()
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
func (b *Backend) sendRecvOne(ctx context.Context, o *engine.Op) error {
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
	pc := b.conns[o.Peer]
	if o.Kind == algo.P2PSend {
		err := wrapPeer(pc.send.Send(ctx, d.Wire(), device.HostBytes(o.Send, n)), o.Peer, "sending to")
		return p2pWaited(o, err, sendNote)
	}
	dst := device.HostBytes(o.Recv, n)
	off := 0
	refused := false
	accept := func(w transport.Desc, got int) error {
		err := d.Check(b.rank, o.Peer, w, got, n)
		refused = err != nil
		if err == nil {
			pc.heard(opdesc.Of(w))
		}
		return err
	}
	err := pc.recv.Recv(ctx, accept, func(p []byte) error { off += copy(dst[off:], p); return nil })
	if refused {
		pc.recv.Fail(err) // the sender's Send fails with it too
		return err
	}
	return p2pWaited(o, wrapPeer(err, o.Peer, "receiving from"), func() string { return pc.note("") })
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
