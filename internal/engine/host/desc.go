package host

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/transport"
)

// opDesc is what every message of an operation says about it, in its
// transport descriptor (transport.Desc, 24 bytes, once per message; the
// transport adds the message's length): the receiver checks it against
// the operation it runs before it uses a byte, so ranks that disagree
// (count, type, operator, root, kind, order, a skipped operation, a Send
// and a Recv of different sizes) get gccl.ErrInvalidUsage naming both
// sides instead of wrong data. Zero-copy operations publish it in the
// control block and compare at their first barrier.
type opDesc struct {
	kind  algo.Kind
	dtype gccl.DataType
	redop uint8  // reducing collectives: the operator; premulSum for CreatePreMulSum's
	seq   uint32 // collectives: the communicator's collective number; p2p: the op's number with this peer, this direction
	epoch uint32 // collectives run before the op (a collective's own number)
	count uint64
	rank  int32 // Broadcast and Reduce: the root; Send: the sender
}

// premulSum stands for every CreatePreMulSum operator (their handles are
// per rank, their factors per rank by design).
const premulSum = 0xff

// collDesc is the descriptor of collective o, the seq-th of the communicator.
func collDesc(o *engine.Op, seq uint32) opDesc {
	d := opDesc{kind: o.Kind, dtype: o.Type, seq: seq, epoch: seq, count: uint64(o.Count), rank: -1}
	if o.Kind.Reduces() {
		d.redop = uint8(o.Op)
		if o.Op >= gccl.NumBuiltinOps {
			d.redop = premulSum
		}
	}
	if o.Kind == algo.Broadcast || o.Kind == algo.Reduce {
		d.rank = int32(o.Root)
	}
	return d
}

// p2pDesc is the descriptor of a Send or Recv with peer: the seq-th in its
// direction with that peer, after epoch collectives. A Send names its
// sender (me); a Recv expects its peer to have sent.
func p2pDesc(o *engine.Op, me int, seq, epoch uint32) opDesc {
	d := opDesc{kind: o.Kind, dtype: o.Type, seq: seq, epoch: epoch, count: uint64(o.Count), rank: int32(me)}
	if o.Kind == algo.P2PRecv {
		d.rank = int32(o.Peer)
	}
	return d
}

func (d opDesc) wire() (w transport.Desc) {
	le := binary.LittleEndian
	w[0], w[1], w[2] = byte(d.kind), byte(d.dtype), d.redop
	le.PutUint32(w[4:], d.seq)
	le.PutUint32(w[8:], d.epoch)
	le.PutUint64(w[12:], d.count)
	le.PutUint32(w[20:], uint32(d.rank))
	return w
}

func descOf(w transport.Desc) opDesc {
	le := binary.LittleEndian
	return opDesc{kind: algo.Kind(w[0]), dtype: gccl.DataType(w[1]), redop: w[2], seq: le.Uint32(w[4:]),
		epoch: le.Uint32(w[8:]), count: le.Uint64(w[12:]), rank: int32(le.Uint32(w[20:]))}
}

// bytes is the payload size the descriptor stands for (Send and Recv).
func (d opDesc) bytes() uint64 {
	if !d.dtype.Valid() {
		return 0
	}
	return d.count * uint64(d.dtype.Size())
}

// matches reports whether got, received, belongs to the operation d runs.
func (d opDesc) matches(got opDesc) bool {
	if d.kind.IsP2P() {
		return got.kind == algo.P2PSend && d.kind == algo.P2PRecv && got.seq == d.seq && got.epoch == d.epoch &&
			got.rank == d.rank && got.bytes() == d.bytes()
	}
	return got == d
}

func (d opDesc) String() string {
	switch {
	case d.kind.IsP2P():
		return fmt.Sprintf("%v(%d %v) #%d with that peer after collective #%d", d.kind, d.count, d.dtype, d.seq, d.epoch)
	case d.kind < 0 || !d.kind.Valid():
		return fmt.Sprintf("an unknown operation (kind %d)", int(d.kind))
	}
	extra := ""
	if d.kind.Reduces() {
		if d.redop == premulSum {
			extra += ", premulsum"
		} else {
			extra += ", " + gccl.RedOp(d.redop).String()
		}
	}
	if d.rank >= 0 {
		extra += fmt.Sprintf(", root %d", d.rank)
	}
	return fmt.Sprintf("%v(%d %v%s) op #%d", d.kind, d.count, d.dtype, extra, d.seq)
}

// checkMsg checks a message received from rank from against d, the
// operation this rank (me) runs, which expects want bytes in it.
func (d opDesc) checkMsg(me, from int, w transport.Desc, n, want int) error {
	got := descOf(w)
	if !d.matches(got) {
		return mismatch(me, from, got, d)
	}
	if n != want {
		return gccl.Errorf(gccl.InvalidUsage, "op", "rank %d received a %d-byte message of %v from rank %d while expecting %d bytes; "+
			"the ranks' configurations differ (GCCL_ALGO, GCCL_CHUNKSIZE, GCCL_PROTO must match)", me, n, d, from, want)
	}
	return nil
}

// mismatch is the error of ranks that disagree: me, running want, got
// the message (or barrier descriptor) of got from rank from.
func mismatch(me, from int, got, want opDesc) error {
	return gccl.Errorf(gccl.InvalidUsage, "op", "rank %d received %v from rank %d while running %v; %w: "+
		"every rank must call the communicator's operations in the same order with the same count, type, operator and root, "+
		"and a Recv must match the peer's Send in size (one goroutine at a time per communicator)", me, got, from, want, errDisagree)
}

// errDisagree is in the chain of every mismatch error.
var errDisagree = errors.New("the ranks disagree")

// refusal returns a peer's refusal of this rank's messages (a disagreement
// it detected), waiting up to refusalGrace for one on its way: the rank
// then reports the disagreement, not the connection the peer closed after.
func (b *Backend) refusal() error {
	b.connMu.Lock()
	conns := slices.Clone(b.conns)
	b.connMu.Unlock()
	for deadline := time.Now().Add(refusalGrace); ; time.Sleep(time.Millisecond) {
		for p, c := range conns {
			if r, ok := c.sendRefuser(); ok {
				if err := r.Refusal(); err != nil {
					return gccl.Errorf(gccl.InvalidUsage, "peer", "rank %d refused this rank's message: %v", p, err)
				}
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
	}
}

// refusalGrace is how long a failed rank waits for a peer's refusal.
const refusalGrace = 20 * time.Millisecond

func (c *peerConn) sendRefuser() (transport.Refuser, bool) {
	if c == nil {
		return nil, false
	}
	r, ok := c.send.(transport.Refuser)
	return r, ok
}
