package harness

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gccl/gccl"
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

// PreMulSum stands for an operator made by coll.CreatePreMulSum in a
// Case's Op; Case.Scalar is its scalar, the same on every rank.
const PreMulSum = gccl.NumBuiltinOps

// Case is one collective call or point-to-point pattern.
type Case struct {
	Kind    string // one of Kinds or P2PKinds
	T       gccl.DataType
	Op      gccl.RedOp // a built-in operator or PreMulSum
	Count   int        // NCCL's count: per rank for AllGather (send) and ReduceScatter (recv); per block for P2PKinds
	Root    int
	Peer    int // sendrecv's receiver, shift's distance (P2PKinds)
	InPlace bool
	Seed    uint64  // of the inputs (Input)
	Scalar  float64 // PreMulSum's
}

func (c Case) String() string {
	place := "out-of-place"
	if c.InPlace {
		place = "in-place"
	}
	op := c.Op.String()
	if c.Op == PreMulSum {
		op = fmt.Sprintf("premulsum(%g)", c.Scalar)
	}
	if IsP2P(c.Kind) {
		return fmt.Sprintf("%s %v count=%d root=%d peer=%d", c.Kind, c.T, c.Count, c.Root, c.Peer)
	}
	if !Reduces(c.Kind) {
		op = "-"
	}
	return fmt.Sprintf("%s %v %s count=%d root=%d %s", c.Kind, c.T, op, c.Count, c.Root, place)
}

// Sizes returns the byte lengths of sendbuff and recvbuff.
func (c Case) Sizes(nranks int) (send, recv int) {
	if IsP2P(c.Kind) {
		return c.p2pSizes(nranks)
	}
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
	if IsP2P(c.Kind) {
		return c.p2pExpected(rank, nranks)
	}
	sendLen, _ := c.Sizes(nranks)
	in := Inputs(c.Seed, nranks, c.T, sendLen/c.T.Size())
	switch c.Kind {
	case "allreduce":
		return reduce.Reference(in, c.T, c.Op, c.Scalar)
	case "broadcast":
		return in[c.Root]
	case "reduce":
		if rank != c.Root {
			return nil
		}
		return reduce.Reference(in, c.T, c.Op, c.Scalar)
	case "allgather":
		return bytes.Join(in, nil)
	case "reducescatter":
		n := c.Count * c.T.Size()
		return reduce.Reference(in, c.T, c.Op, c.Scalar)[rank*n : (rank+1)*n]
	}
	panic("harness: unknown collective kind " + c.Kind)
}

// Launch enqueues the case on s with its buffers from bufs; in place,
// sendbuff lies inside recvbuff where NCCL puts it (InPlaceOffsets). A
// PreMulSum Case is not launched here: it needs an operator (see Call).
func (c Case) Launch(cm *comm.Comm, bufs *Buffers, s gccl.Stream) (recv uintptr, err error) {
	rank, nranks := cm.Rank(), cm.Count()
	sendLen, recvLen := c.Sizes(nranks)
	mine := Input(c.Seed, rank, c.T, sendLen/c.T.Size())
	call := Call{Case: c, RedOp: c.Op}
	if c.InPlace {
		sendOff, recvOff := c.InPlaceOffsets(rank, nranks)
		buf := PoisonBytes(max(sendLen, recvLen))
		copy(buf[sendOff:], mine)
		p := bufs.Alloc(len(buf), buf)
		call.Send, call.Recv = p+uintptr(sendOff), p+uintptr(recvOff)
	} else {
		call.Send, call.Recv = bufs.Alloc(sendLen, mine), bufs.Alloc(recvLen, nil)
	}
	return call.Recv, call.Launch(cm, s)
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
