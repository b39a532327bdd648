package bootstrap

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"slices"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
)

// Liveness. A process that dies (kill -9, crash, Abort) has its sockets
// closed by the kernel or by Abort, so each rank connected to it sees the
// end of the stream at once; a rank that closes normally says goodbye
// first, so that its peers can tell the two apart: only an end without a
// goodbye counts as the loss of a peer.
//
// Connections are made on demand, so not every rank is connected to a
// dead one; but its two ring neighbours always are (Init connects the
// ring). A rank that sees a peer lost tells its ring neighbours, and each
// rank that hears of a loss for the first time passes it on around the
// ring, away from where it came: every survivor learns of the loss, naming
// the lost rank, after at most n/2 hops (two dead neighbours cut the ring,
// and each piece still hears it from its ends).

// Internal tags of the control messages; internal collective tags count up
// from 1 and never reach them.
const (
	byeTag  = math.MaxUint64     // the sender is closing normally
	lostTag = math.MaxUint64 - 1 // payload: the lost rank and the rank that saw it end, 4 bytes each
	quitTag = math.MaxUint64 - 2 // the sender's Init failed and it is aborting; payload: why (a wire.Status)
)

// byeTimeout bounds the goodbye's write to each connection, and the
// passing on of a loss to each neighbour.
const byeTimeout = 200 * time.Millisecond

// Lost is closed when a peer is lost: its bootstrap connection ended
// without a goodbye (the peer process died or aborted) here or at another
// rank. LostErr then says which.
func (n *Net) Lost() <-chan struct{} {
	if n == nil {
		return nil
	}
	return n.lost
}

// LostErr is the first peer loss (gccl.ErrRemote naming the rank), or nil.
func (n *Net) LostErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lostErr
}

// sayGoodbye tells every connected peer, on every connection, that this
// rank is closing normally.
func (n *Net) sayGoodbye() {
	n.mu.Lock()
	var conns []net.Conn
	if n.closed == nil {
		for _, l := range n.links {
			for _, c := range []net.Conn{l.in, l.out} {
				if c != nil {
					conns = append(conns, c)
				}
			}
		}
	}
	n.mu.Unlock()
	bye := wire.Data{Internal: true, Tag: byeTag}
	for _, c := range conns {
		_ = c.SetWriteDeadline(time.Now().Add(byeTimeout))
		_ = wire.WriteData(c, &bye)
	}
}

// sayWhy tells every connected peer why this rank's Init failed, just
// before it aborts: the neighbours that see its connections end then fail
// their own Init with that cause (a timeout naming the rank that never
// came, say), not with this rank's loss.
func (n *Net) sayWhy(err error) {
	n.mu.Lock()
	var conns []*outConn
	if n.closed == nil {
		for _, l := range n.links {
			if l.send != nil {
				conns = append(conns, l.send)
			}
		}
	}
	n.mu.Unlock()
	st := wire.StatusOf(err)
	m := wire.Data{Internal: true, Tag: quitTag, Payload: st.Encode()}
	ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
	defer cancel()
	for _, o := range conns {
		_ = o.write(ctx, m)
	}
}

// control handles the bootstrap's own messages from p; it reports whether
// m was one.
func (n *Net) control(p int, m wire.Data) bool {
	if !m.Internal {
		return false
	}
	switch m.Tag {
	case byeTag:
		n.mu.Lock()
		n.left[p] = true
		n.mu.Unlock()
	case quitTag:
		if st, err := wire.DecodeStatus(m.Payload); err == nil && st.Code != 0 {
			n.mu.Lock()
			n.quit[p] = st.Err()
			n.mu.Unlock()
		}
	case lostTag:
		if len(m.Payload) == 8 {
			x, w := binary.LittleEndian.Uint32(m.Payload), binary.LittleEndian.Uint32(m.Payload[4:])
			if int64(x) < int64(n.nranks) && int64(w) < int64(n.nranks) && int(x) != n.rank {
				n.hearLoss(int(x), int(w), p)
			}
		}
	default:
		return false
	}
	return true
}

// hearLoss records that witness saw rank x lost (as from, a ring
// neighbour, reports) and passes the news on.
func (n *Net) hearLoss(x, witness, from int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed != nil || n.dead[x] != nil || n.heard[x] {
		return
	}
	err := gccl.Errorf(gccl.RemoteError, peerArg(x),
		"rank %d was lost: rank %d saw its bootstrap connection end without a goodbye (it exited, aborted or crashed)", x, witness)
	// With a connection of its own to x, this rank learns of the loss
	// from it, after whatever x sent before it went (the news can overtake
	// that data: it comes on another connection); waits on x end then.
	if !n.links[x].connected() {
		n.dead[x] = err
	}
	n.noteLoss(x, witness, from, err)
	n.notify()
}

// noteLoss records err as the loss of peer x, seen by witness, and passes
// it on to the ring neighbours other than from; called with n.mu held.
// The witness fires Lost only once the news is written: the comm package
// aborts the engine on Lost, and that abort reaches the neighbours' engines
// through the transports; the news should not come after it. A rank that
// hears the news fires Lost at once.
func (n *Net) noteLoss(x, witness, from int, err error) {
	n.heard[x] = true
	first := n.lostErr == nil
	if first {
		n.lostErr = err
		if witness != n.rank {
			close(n.lost)
			first = false
		}
	}
	next, prev := n.ring()
	msg := wire.Data{Internal: true, Tag: lostTag, Payload: binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(x)), uint32(witness))}
	var to []*outConn
	for _, q := range []int{next, prev} {
		if l := n.links[q]; q != x && q != from && q != n.rank && l.connected() && n.dead[q] == nil && !slices.Contains(to, l.send) {
			to = append(to, l.send)
		}
	}
	n.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
		defer cancel()
		for _, o := range to {
			_ = o.write(ctx, msg)
		}
		if first {
			close(n.lost)
		}
	})
}
