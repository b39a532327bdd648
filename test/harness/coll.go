package harness

import (
	"bytes"
	"fmt"

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

// Data is a case with every rank's input and the reference, computed once
// (the reference needs every rank's input anyway).
type Data struct {
	Case
	In  [][]byte // rank r's input
	ref []byte   // the reduction, the joined inputs or the root's input
}

// Prepare computes the inputs of nranks ranks and the reference.
func (c Case) Prepare(nranks int) *Data {
	sendLen, _ := c.Sizes(nranks)
	d := &Data{Case: c, In: Inputs(c.Seed, nranks, c.T, sendLen/c.T.Size())}
	switch c.Kind {
	case "allreduce", "reduce", "reducescatter":
		d.ref = periodicReference(d.In, c.T, c.Op, c.Scalar)
	case "broadcast":
		d.ref = d.In[c.Root]
	case "allgather":
		d.ref = bytes.Join(d.In, nil)
	default:
		panic("harness: unknown collective kind " + c.Kind)
	}
	return d
}

// periodicReference is reduce.Reference of inputs made by Input: they
// repeat their first tileElems elements, so the reduction does too, and
// only one period is computed (a 1000003-element case on 12 ranks in every
// rank's process would otherwise cost more than the operation).
func periodicReference(in [][]byte, t gccl.DataType, op gccl.RedOp, scalar float64) []byte {
	period := tileElems * t.Size()
	if len(in) == 0 || len(in[0]) <= period {
		return reduce.Reference(in, t, op, scalar)
	}
	heads := make([][]byte, len(in))
	for r, b := range in {
		heads[r] = b[:period]
	}
	tile := reduce.Reference(heads, t, op, scalar)
	ref := make([]byte, len(in[0]))
	for off := 0; off < len(ref); off += period {
		copy(ref[off:], tile)
	}
	return ref
}

// Want returns what rank's recvbuff must hold, or nil where it is
// undefined (Reduce on a rank other than the root).
func (d *Data) Want(rank int) []byte {
	switch {
	case d.Kind == "reduce" && rank != d.Root:
		return nil
	case d.Kind == "reducescatter":
		n := d.Count * d.T.Size()
		return d.ref[rank*n : (rank+1)*n]
	}
	return d.ref
}

// Expected returns what rank's recvbuff must hold, or nil where it is
// undefined (Reduce on a rank other than the root).
func (c Case) Expected(rank, nranks int) []byte {
	if IsP2P(c.Kind) {
		return c.p2pExpected(rank, nranks)
	}
	return c.Prepare(nranks).Want(rank)
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

// Launch enqueues the case on s with its buffers in sc, recvbuff poisoned;
// in place, sendbuff lies inside recvbuff where NCCL puts it (at rank's
// block for AllGather and ReduceScatter).
func (d *Data) Launch(cm *comm.Comm, sc *Scratch, s gccl.Stream) (recv uintptr, err error) {
	rank, nranks := cm.Rank(), cm.Count()
	sendLen, recvLen := d.Sizes(nranks)
	mine := d.In[rank]
	var send uintptr
	switch {
	case !d.InPlace:
		send, recv, err = sc.Pair(sendLen, recvLen)
		if err == nil {
			err = firstErr(sc.Fill(send, mine), sc.Poison(recv, recvLen))
		}
	case d.Kind == "allgather":
		recv, _, err = sc.Pair(recvLen, 0)
		send = recv + uintptr(rank*sendLen)
		if err == nil {
			err = firstErr(sc.Poison(recv, recvLen), sc.Fill(send, mine))
		}
	default: // recvbuff is sendbuff, or rank's block of it for ReduceScatter
		send, _, err = sc.Pair(sendLen, 0)
		recv = send
		if d.Kind == "reducescatter" {
			recv += uintptr(rank * recvLen)
		}
		if err == nil {
			err = sc.Fill(send, mine)
		}
	}
	if err != nil {
		return 0, err
	}
	n := d.Count
	switch d.Kind {
	case "allreduce":
		return recv, coll.AllReduce(cm, send, recv, n, d.T, d.Op, s)
	case "broadcast":
		return recv, coll.Broadcast(cm, send, recv, n, d.T, d.Root, s)
	case "reduce":
		return recv, coll.Reduce(cm, send, recv, n, d.T, d.Op, d.Root, s)
	case "allgather":
		return recv, coll.AllGather(cm, send, recv, n, d.T, s)
	}
	return recv, coll.ReduceScatter(cm, send, recv, n, d.T, d.Op, s)
}

// Run launches the case on s, waits (with MPI progress), takes the
// communicator's asynchronous error and checks every element of recvbuff.
func (d *Data) Run(cm *comm.Comm, sc *Scratch, s gccl.Stream) error {
	recv, err := d.Launch(cm, sc, s)
	if err == nil {
		err = mpiboot.Wait(cm.Device(), s, 0)
	}
	if err == nil {
		err = cm.AsyncError() // a failure a kernel or the host side reported
	}
	if err == nil {
		err = d.Check(cm.Rank(), sc, recv)
	}
	if err != nil {
		return fmt.Errorf("%v: %w", d.Case, err)
	}
	return nil
}

// Check compares every element of rank's recvbuff at recv with Want.
func (d *Data) Check(rank int, sc *Scratch, recv uintptr) error {
	want := d.Want(rank)
	if want == nil {
		return nil
	}
	got, err := sc.Read(recv, len(want))
	if err != nil {
		return err
	}
	return reduce.Check(got, want, d.T, len(d.In))
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
