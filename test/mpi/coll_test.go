package mpi

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

// collCase is one collective call: kind, type, operator, count, root, in place.
type collCase struct {
	kind    string
	t       gccl.DataType
	op      gccl.RedOp
	count   int // NCCL's count: per rank for AllGather (send) and ReduceScatter (recv)
	root    int
	inPlace bool
	seed    uint64
}

func (c collCase) String() string {
	place := "out-of-place"
	if c.inPlace {
		place = "in-place"
	}
	return fmt.Sprintf("%s %v %v count=%d root=%d %s", c.kind, c.t, c.op, c.count, c.root, place)
}

var reducing = map[string]bool{"allreduce": true, "reduce": true, "reducescatter": true}

// collCases is the matrix: every kind × type × operator × placement at a
// count that no rank count divides evenly, then every kind at the edge
// counts (0, 1, nranks±1) and a large count, for two types.
func collCases(nranks int) []collCase {
	kinds := []string{"allreduce", "broadcast", "reduce", "allgather", "reducescatter"}
	var cases []collCase
	add := func(k string, t gccl.DataType, op gccl.RedOp, n int, inPlace bool) {
		root := (len(cases)*7 + 3) % nranks
		cases = append(cases, collCase{k, t, op, n, root, inPlace, uint64(len(cases)) + 1})
	}
	for _, k := range kinds {
		for _, t := range gccl.DataTypes() {
			ops := []gccl.RedOp{gccl.Sum}
			if reducing[k] {
				ops = gccl.RedOps()
			}
			for _, op := range ops {
				for _, ip := range []bool{false, true} {
					add(k, t, op, 37, ip)
				}
			}
		}
		for _, n := range []int{0, 1, nranks - 1, nranks + 1, 3*nranks + 2, 100_003} {
			for _, t := range []gccl.DataType{gccl.Float32, gccl.Int8} {
				add(k, t, gccl.Sum, max(n, 0), n%2 == 0)
			}
		}
	}
	return cases
}

// sizes returns the byte lengths of sendbuff and recvbuff.
func (c collCase) sizes(nranks int) (send, recv int) {
	n := c.count * c.t.Size()
	switch c.kind {
	case "allgather":
		return n, n * nranks
	case "reducescatter":
		return n * nranks, n
	}
	return n, n
}

// expected returns what rank's recvbuff must hold, or nil where it is undefined.
func (c collCase) expected(rank, nranks int) []byte {
	sendLen, _ := c.sizes(nranks)
	in := inputs(c.seed, nranks, c.t, sendLen/c.t.Size())
	switch c.kind {
	case "allreduce":
		return reduce.Reference(in, c.t, c.op, 0)
	case "broadcast":
		return in[c.root]
	case "reduce":
		if rank != c.root {
			return nil
		}
		return reduce.Reference(in, c.t, c.op, 0)
	case "allgather":
		return bytes.Join(in, nil)
	case "reducescatter":
		n := c.count * c.t.Size()
		return reduce.Reference(in, c.t, c.op, 0)[rank*n : (rank+1)*n]
	}
	panic("unknown kind " + c.kind)
}

// launch enqueues the case on s; in place, sendbuff lies inside recvbuff
// where NCCL puts it (at rank's block for AllGather and ReduceScatter).
func (c collCase) launch(cm *comm.Comm, bufs *buffers, s gccl.Stream) (recv uintptr, err error) {
	rank, nranks := cm.Rank(), cm.Count()
	sendLen, recvLen := c.sizes(nranks)
	mine := input(c.seed, rank, c.t, sendLen/c.t.Size())
	var send uintptr
	switch {
	case !c.inPlace:
		send, recv = bufs.alloc(sendLen, mine), bufs.alloc(recvLen, nil)
	case c.kind == "allgather":
		full := bytes.Repeat([]byte{poison}, recvLen)
		copy(full[rank*sendLen:], mine)
		recv = bufs.alloc(recvLen, full)
		send = recv + uintptr(rank*sendLen)
	case c.kind == "reducescatter":
		send = bufs.alloc(sendLen, mine)
		recv = send + uintptr(rank*recvLen)
	default:
		recv = bufs.alloc(sendLen, mine)
		send = recv
	}
	n := c.count
	switch c.kind {
	case "allreduce":
		return recv, coll.AllReduce(cm, send, recv, n, c.t, c.op, s)
	case "broadcast":
		return recv, coll.Broadcast(cm, send, recv, n, c.t, c.root, s)
	case "reduce":
		return recv, coll.Reduce(cm, send, recv, n, c.t, c.op, c.root, s)
	case "allgather":
		return recv, coll.AllGather(cm, send, recv, n, c.t, s)
	default:
		return recv, coll.ReduceScatter(cm, send, recv, n, c.t, c.op, s)
	}
}

// run launches, waits (with MPI progress) and checks one case.
func (c collCase) run(t *testing.T, cm *comm.Comm) error {
	bufs := newBuffers(t, cm.Device())
	s := bufs.stream()
	recv, err := c.launch(cm, bufs, s)
	if err == nil {
		err = mpiboot.Wait(cm.Device(), s, 0)
	}
	if err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	want := c.expected(cm.Rank(), cm.Count())
	if want == nil {
		return nil
	}
	if err := reduce.Check(bufs.read(recv, len(want)), want, c.t, cm.Count()); err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	return nil
}

func TestCollectives(t *testing.T) {
	cm := world(t)
	var failures []error
	for _, c := range collCases(cm.Count()) {
		if err := c.run(t, cm); err != nil {
			failures = append(failures, err)
			if len(failures) > 50 {
				break // every process fails alike when an operation errors; stop together
			}
		}
	}
	agree(t, failures)
}

// TestCollectivesOnSplit runs the float32 part of the matrix on each half
// of the world (halves talk only among themselves).
func TestCollectivesOnSplit(t *testing.T) {
	rank, size := mpiboot.World()
	sub, err := world(t).Split(b2i(rank >= size/2), rank, config())
	if err != nil {
		agree(t, []error{err})
		return
	}
	defer sub.Close()
	var failures []error
	for _, c := range collCases(sub.Count()) {
		if c.t != gccl.Float32 {
			continue
		}
		if err := c.run(t, sub); err != nil {
			failures = append(failures, err)
		}
	}
	agree(t, failures)
}
