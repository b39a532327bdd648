package opdesc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/transport"
)

// Desc is what every message of an operation says about it, and what the
// receiver checks against the operation it runs (Check). Descs compare
// with ==.
type Desc struct {
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

// Coll is the descriptor of collective o, the seq-th of the communicator.
func Coll(o *engine.Op, seq uint32) Desc {
	d := Desc{kind: o.Kind, dtype: o.Type, seq: seq, epoch: seq, count: uint64(o.Count), rank: -1}
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

// P2P is the descriptor of a Send or Recv with peer: the seq-th in its
// direction with that peer, after epoch collectives. A Send names its
// sender (me); a Recv expects its peer to have sent.
func P2P(o *engine.Op, me int, seq, epoch uint32) Desc {
	d := Desc{kind: o.Kind, dtype: o.Type, seq: seq, epoch: epoch, count: uint64(o.Count), rank: int32(me)}
	if o.Kind == algo.P2PRecv {
		d.rank = int32(o.Peer)
	}
	return d
}

// Wire is d as a message carries it.
func (d Desc) Wire() (w transport.Desc) {
	le := binary.LittleEndian
	w[0], w[1], w[2] = byte(d.kind), byte(d.dtype), d.redop
	le.PutUint32(w[4:], d.seq)
	le.PutUint32(w[8:], d.epoch)
	le.PutUint64(w[12:], d.count)
	le.PutUint32(w[20:], uint32(d.rank))
	return w
}

// Of reads a descriptor from its wire form.
func Of(w transport.Desc) Desc {
	le := binary.LittleEndian
	return Desc{kind: algo.Kind(w[0]), dtype: gccl.DataType(w[1]), redop: w[2], seq: le.Uint32(w[4:]),
		epoch: le.Uint32(w[8:]), count: le.Uint64(w[12:]), rank: int32(le.Uint32(w[20:]))}
}

// bytes is the payload size the descriptor stands for (Send and Recv).
func (d Desc) bytes() uint64 {
	if !d.dtype.Valid() {
		return 0
	}
	return d.count * uint64(d.dtype.Size())
}

// matches reports whether got, received, belongs to the operation d runs.
func (d Desc) matches(got Desc) bool {
	if d.kind.IsP2P() {
		return got.kind == algo.P2PSend && d.kind == algo.P2PRecv && got.seq == d.seq && got.epoch == d.epoch &&
			got.rank == d.rank && got.bytes() == d.bytes()
	}
	return got == d
}

func (d Desc) String() string {
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

// Check checks a message of n bytes received from rank from, whose wire
// descriptor is w, against d, the operation this rank (me) runs, which
// expects want bytes in it.
func (d Desc) Check(me, from int, w transport.Desc, n, want int) error {
	got := Of(w)
	if !d.matches(got) {
		return Mismatch(me, from, got, d)
	}
	if n != want {
		return gccl.Errorf(gccl.InvalidUsage, "op", "rank %d received a %d-byte message of %v from rank %d while expecting %d bytes; "+
			"the ranks' configurations differ (GCCL_ALGO, GCCL_CHUNKSIZE, GCCL_PROTO must match)", me, n, d, from, want)
	}
	return nil
}

// Mismatch is the error of ranks that disagree: me, running want, got
// the message (or barrier descriptor) of got from rank from.
func Mismatch(me, from int, got, want Desc) error {
	return gccl.Errorf(gccl.InvalidUsage, "op", "rank %d received %v from rank %d while running %v; %w: "+
		"every rank must call the communicator's operations in the same order with the same count, type, operator and root, "+
		"and a Recv must match the peer's Send in size (one goroutine at a time per communicator)", me, got, from, want, ErrDisagree)
}

// ErrDisagree is in the chain of every Mismatch error.
var ErrDisagree = errors.New("the ranks disagree")
