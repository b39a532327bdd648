package nccl

import (
	"fmt"
	"math"

	"github.com/gccl/gccl"
)

// OpKind is an NCCL operation (the shim's GCCL_NCCL_OP_* numbering).
type OpKind int32

// The operations.
const (
	AllReduce OpKind = iota
	Broadcast
	Reduce
	AllGather
	ReduceScatter
	Send
	Recv
	numOpKinds
)

var opKindNames = [numOpKinds]string{
	"ncclAllReduce", "ncclBroadcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter", "ncclSend", "ncclRecv",
}

// String is the NCCL function's name.
func (k OpKind) String() string {
	if k >= 0 && k < numOpKinds {
		return opKindNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", int32(k))
}

// Op is one operation with NCCL's arguments: Count is the count
// argument of the NCCL call (per rank for AllGather and ReduceScatter),
// Root is used by Broadcast and Reduce, Peer by Send and Recv, Op by the
// reductions.
type Op struct {
	Kind       OpKind
	Send, Recv uintptr
	Count      int
	Type       gccl.DataType
	Op         gccl.RedOp
	Root, Peer int
}

// packed is an Op as the shim takes it (gccl_nccl_op).
type packed struct {
	kind, dtype, op int32
	root            int32 // the root, or the peer of send and recv
	count           uint64
	send, recv      uintptr
	comm, stream    uintptr
}

// pack validates o for this communicator and packs it for the shim. Errors
// name NCCL's argument (sendbuff, recvbuff, count, datatype, op, root, peer).
func (c *Comm) pack(o Op, h uintptr, s gccl.Stream) (packed, error) {
	if o.Kind < 0 || o.Kind >= numOpKinds {
		return packed{}, gccl.Errorf(gccl.InvalidArgument, "kind", "unknown NCCL operation %d", int32(o.Kind))
	}
	dt, err := DataType(o.Type, c.n.version)
	if err != nil {
		return packed{}, err
	}
	if o.Count < 0 || uint64(o.Count) > math.MaxInt64/uint64(o.Type.Size()) {
		return packed{}, gccl.Errorf(gccl.InvalidArgument, "count", "%s count %d is negative or overflows", o.Kind, o.Count)
	}
	p := packed{kind: int32(o.Kind), dtype: dt, count: uint64(o.Count), send: o.Send, recv: o.Recv,
		comm: h, stream: uintptr(s)}
	if o.Kind == AllReduce || o.Kind == Reduce || o.Kind == ReduceScatter {
		if p.op, err = RedOp(o.Op, c.n.version); err != nil {
			return packed{}, err
		}
	}
	switch o.Kind {
	case Broadcast, Reduce:
		if o.Root < 0 || o.Root >= c.nranks {
			return packed{}, gccl.Errorf(gccl.InvalidArgument, "root", "%s root %d is out of range; it must be in [0, %d)", o.Kind, o.Root, c.nranks)
		}
		p.root = int32(o.Root)
	case Send, Recv:
		if o.Peer < 0 || o.Peer >= c.nranks {
			return packed{}, gccl.Errorf(gccl.InvalidArgument, "peer", "%s peer %d is out of range; it must be in [0, %d)", o.Kind, o.Peer, c.nranks)
		}
		p.root = int32(o.Peer)
	}
	return p, c.checkBuffers(o)
}

// checkBuffers refuses nil buffers the operation reads or writes on this
// rank (NCCL itself allows a nil recvbuff off the root of a Reduce and a
// nil sendbuff off the root of a Broadcast).
func (c *Comm) checkBuffers(o Op) error {
	if o.Count == 0 {
		return nil
	}
	root := c.rank == o.Root
	needSend, needRecv := true, true
	switch o.Kind {
	case Broadcast:
		needSend = root
	case Reduce:
		needRecv = root
	case Send:
		needRecv = false
	case Recv:
		needSend = false
	}
	switch {
	case needSend && o.Send == 0:
		return gccl.Errorf(gccl.InvalidArgument, "sendbuff", "%s of %d elements with a nil sendbuff", o.Kind, o.Count)
	case needRecv && o.Recv == 0:
		return gccl.Errorf(gccl.InvalidArgument, "recvbuff", "%s of %d elements with a nil recvbuff", o.Kind, o.Count)
	}
	return nil
}

// Launch enqueues ops on stream s: one op as a plain NCCL call, several as
// one group (ncclGroupStart ... ncclGroupEnd). Like NCCL it returns once
// the work is enqueued; while the nonblocking communicator is still
// connecting it waits (at most the communicator's timeout) for that.
func (c *Comm) Launch(s gccl.Stream, ops ...Op) error {
	h, err := c.handle()
	if err != nil || len(ops) == 0 {
		return err
	}
	packed := make([]packed, len(ops))
	for i, o := range ops {
		if packed[i], err = c.pack(o, h, s); err != nil {
			return err
		}
	}
	grouped := len(ops) > 1
	issued, r := c.n.api.launch(packed, grouped)
	fn := "ncclGroupEnd"
	if issued < len(ops) {
		fn = ops[issued].Kind.String()
	} else if !grouped {
		fn = ops[0].Kind.String()
	}
	if r == InProgress {
		return c.settle(fn)
	}
	return c.n.check(fn, h, r)
}

// AllReduce is ncclAllReduce.
func (c *Comm) AllReduce(send, recv uintptr, count int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) error {
	return c.Launch(s, Op{Kind: AllReduce, Send: send, Recv: recv, Count: count, Type: t, Op: op})
}

// Broadcast is ncclBroadcast.
func (c *Comm) Broadcast(send, recv uintptr, count int, t gccl.DataType, root int, s gccl.Stream) error {
	return c.Launch(s, Op{Kind: Broadcast, Send: send, Recv: recv, Count: count, Type: t, Root: root})
}

// Reduce is ncclReduce.
func (c *Comm) Reduce(send, recv uintptr, count int, t gccl.DataType, op gccl.RedOp, root int, s gccl.Stream) error {
	return c.Launch(s, Op{Kind: Reduce, Send: send, Recv: recv, Count: count, Type: t, Op: op, Root: root})
}

// AllGather is ncclAllGather (sendcount elements from each rank).
func (c *Comm) AllGather(send, recv uintptr, sendcount int, t gccl.DataType, s gccl.Stream) error {
	return c.Launch(s, Op{Kind: AllGather, Send: send, Recv: recv, Count: sendcount, Type: t})
}

// ReduceScatter is ncclReduceScatter (recvcount elements to each rank).
func (c *Comm) ReduceScatter(send, recv uintptr, recvcount int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) error {
	return c.Launch(s, Op{Kind: ReduceScatter, Send: send, Recv: recv, Count: recvcount, Type: t, Op: op})
}

// Send is ncclSend; pair it with the peer's Recv in one Launch group when
// both directions are in flight.
func (c *Comm) Send(send uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) error {
	return c.Launch(s, Op{Kind: Send, Send: send, Count: count, Type: t, Peer: peer})
}

// Recv is ncclRecv.
func (c *Comm) Recv(recv uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) error {
	return c.Launch(s, Op{Kind: Recv, Recv: recv, Count: count, Type: t, Peer: peer})
}
