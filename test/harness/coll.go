package harness

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
)

// Kinds are the collectives a Case can be.
var Kinds = []string{"allreduce", "broadcast", "reduce", "allgather", "reducescatter"}

// Reduces reports whether collective kind takes a reduction operator.
func Reduces(kind string) bool {
	return kind == "allreduce" || kind == "reduce" || kind == "reducescatter"
}

// Case is one collective call.
type Case struct {
	Kind    string // one of Kinds
	T       gccl.DataType
	Op      gccl.RedOp
	Count   int // NCCL's count: per rank for AllGather (send) and ReduceScatter (recv)
	Root    int
	InPlace bool
	Seed    uint64 // of the inputs (Input)
}

func (c Case) String() string {
	place := "out-of-place"
	if c.InPlace {
		place = "in-place"
	}
	return fmt.Sprintf("%s %v %v count=%d root=%d %s", c.Kind, c.T, c.Op, c.Count, c.Root, place)
}

// Sizes returns the byte lengths of sendbuff and recvbuff.
func (c Case) Sizes(nranks int) (send, recv int) {
	n := c.Count * c.T.Size()
	switch c.Kind {
	case "allgather":
		return n, n * nranks
	case "reducescatter":
		return n * nranks, n
	}
	return n, n
}

// Expected returns what rank's recvbuff must hold, or nil where it is
// undefined (Reduce on a rank other than the root).
func (c Case) Expected(rank, nranks int) []byte {
	sendLen, _ := c.Sizes(nranks)
	in := Inputs(c.Seed, nranks, c.T, sendLen/c.T.Size())
	switch c.Kind {
	case "allreduce":
		return reduce.Reference(in, c.T, c.Op, 0)
	case "broadcast":
		return in[c.Root]
	case "reduce":
		if rank != c.Root {
			return nil
		}
		return reduce.Reference(in, c.T, c.Op, 0)
	case "allgather":
		return bytes.Join(in, nil)
	case "reducescatter":
		n := c.Count * c.T.Size()
		return reduce.Reference(in, c.T, c.Op, 0)[rank*n : (rank+1)*n]
	}
	panic("harness: unknown collective kind " + c.Kind)
}

// Launch enqueues the case on s; in place, sendbuff lies inside recvbuff
// where NCCL puts it (at rank's block for AllGather and ReduceScatter).
func (c Case) Launch(cm *comm.Comm, bufs *Buffers, s gccl.Stream) (recv uintptr, err error) {
	rank, nranks := cm.Rank(), cm.Count()
	sendLen, recvLen := c.Sizes(nranks)
	mine := Input(c.Seed, rank, c.T, sendLen/c.T.Size())
	var send uintptr
	switch {
	case !c.InPlace:
		send, recv = bufs.Alloc(sendLen, mine), bufs.Alloc(recvLen, nil)
	case c.Kind == "allgather":
		all := PoisonBytes(recvLen)
		copy(all[rank*sendLen:], mine)
		recv = bufs.Alloc(recvLen, all)
		send = recv + uintptr(rank*sendLen)
	case c.Kind == "reducescatter":
		send = bufs.Alloc(sendLen, mine)
		recv = send + uintptr(rank*recvLen)
	default:
		recv = bufs.Alloc(sendLen, mine)
		send = recv
	}
	n := c.Count
	switch c.Kind {
	case "allreduce":
		return recv, coll.AllReduce(cm, send, recv, n, c.T, c.Op, s)
	case "broadcast":
		return recv, coll.Broadcast(cm, send, recv, n, c.T, c.Root, s)
	case "reduce":
		return recv, coll.Reduce(cm, send, recv, n, c.T, c.Op, c.Root, s)
	case "allgather":
		return recv, coll.AllGather(cm, send, recv, n, c.T, s)
	}
	return recv, coll.ReduceScatter(cm, send, recv, n, c.T, c.Op, s)
}

// Run launches the case on s, waits (with MPI progress), takes the
// communicator's asynchronous error and checks every element of recvbuff.
func (c Case) Run(t *testing.T, cm *comm.Comm, s gccl.Stream) error {
	bufs := NewBuffers(t, cm.Device())
	recv, err := c.Launch(cm, bufs, s)
	if err == nil {
		err = mpiboot.Wait(cm.Device(), s, 0)
	}
	if err == nil {
		err = cm.AsyncError() // a failure a kernel or the host side reported
	}
	if err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	want := c.Expected(cm.Rank(), cm.Count())
	if want == nil {
		return nil
	}
	if err := reduce.Check(bufs.Read(recv, len(want)), want, c.T, cm.Count()); err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	return nil
}
