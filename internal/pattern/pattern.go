// Package pattern builds the grouped send/receive patterns that NCCL
// documents (scatter, gather, all-to-all, neighbour exchange) as engine
// ops, for package p2p, which launches them, and package group, which adds
// them to a group so that they fuse with other operations. Every function
// takes the rank and rank count of the communicator and checks the
// arguments that the ops themselves cannot (root, per-peer vectors), and,
// through Check (the engine's CheckRange), that the whole extent of each
// buffer its ops address lies inside one live allocation: a displacement
// that reaches past sendbuff's allocation into the next one is not seen
// by the check of the one Send it makes.
package pattern

import (
	"errors"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/ops"
)

// Check reports whether the n bytes at p lie inside one live allocation
// (engine.Engine.CheckRange); nil checks nothing.
type Check func(arg string, p uintptr, n int) error

// Scatter: rank i receives block i (count elements) of root's sendbuff.
func Scatter(check Check, rank, nranks int, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) ([]engine.Op, error) {
	if err := checkRoot(root, nranks); err != nil {
		return nil, err
	}
	if rank == root {
		if err := extent(check, "Scatter", "sendbuff", sendbuff, nranks*count, t); err != nil {
			return nil, err
		}
	}
	out := []engine.Op{ops.Recv(recvbuff, count, t, root, s)}
	if rank == root {
		for i := range nranks {
			out = append(out, ops.Send(offset(sendbuff, i*count, t), count, t, i, s))
		}
	}
	return out, nil
}

// Gather: root receives every rank's count elements, rank i's at block i.
func Gather(check Check, rank, nranks int, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) ([]engine.Op, error) {
	if err := checkRoot(root, nranks); err != nil {
		return nil, err
	}
	if rank == root {
		if err := extent(check, "Gather", "recvbuff", recvbuff, nranks*count, t); err != nil {
			return nil, err
		}
	}
	out := []engine.Op{ops.Send(sendbuff, count, t, root, s)}
	if rank == root {
		for i := range nranks {
			out = append(out, ops.Recv(offset(recvbuff, i*count, t), count, t, i, s))
		}
	}
	return out, nil
}

func checkRoot(root, nranks int) error {
	if root < 0 || root >= nranks {
		return gccl.Errorf(gccl.InvalidArgument, "root", "root %d is not a rank of this %d-rank communicator", root, nranks)
	}
	return nil
}

// AllToAll: block j (count elements) of sendbuff goes to rank j, which
// stores it as block rank of its recvbuff.
func AllToAll(check Check, nranks int, sendbuff, recvbuff uintptr, count int, t gccl.DataType, s gccl.Stream) ([]engine.Op, error) {
	counts, displs := make([]int, nranks), make([]int, nranks)
	for i := range nranks {
		counts[i], displs[i] = count, i*count
	}
	return AllToAllv(check, nranks, sendbuff, counts, displs, recvbuff, counts, displs, t, s)
}

// AllToAllv: sendcounts[j] elements at sdispls[j] go to rank j;
// recvcounts[j] elements from rank j land at rdispls[j] (in elements).
func AllToAllv(check Check, nranks int, sendbuff uintptr, sendcounts, sdispls []int, recvbuff uintptr, recvcounts, rdispls []int, t gccl.DataType, s gccl.Stream) ([]engine.Op, error) {
	for _, v := range []struct {
		name string
		v    []int
	}{{"sendcounts", sendcounts}, {"sdispls", sdispls}, {"recvcounts", recvcounts}, {"rdispls", rdispls}} {
		if len(v.v) != nranks {
			return nil, gccl.Errorf(gccl.InvalidArgument, v.name, "has %d entries; want one per rank (%d)", len(v.v), nranks)
		}
		for j, x := range v.v {
			if x < 0 {
				return nil, gccl.Errorf(gccl.InvalidArgument, v.name, "entry %d is negative (%d)", j, x)
			}
		}
	}
	if err := extent(check, "AllToAllv (sdispls[j]+sendcounts[j])", "sendbuff", sendbuff, reach(sendcounts, sdispls), t); err != nil {
		return nil, err
	}
	if err := extent(check, "AllToAllv (rdispls[j]+recvcounts[j])", "recvbuff", recvbuff, reach(recvcounts, rdispls), t); err != nil {
		return nil, err
	}
	out := make([]engine.Op, 0, 2*nranks)
	for j := range nranks {
		out = append(out,
			ops.Send(offset(sendbuff, sdispls[j], t), sendcounts[j], t, j, s),
			ops.Recv(offset(recvbuff, rdispls[j], t), recvcounts[j], t, j, s))
	}
	return out, nil
}

// reach is how many elements from the start of a buffer the blocks
// (counts[j] elements at displs[j]) address.
func reach(counts, displs []int) int {
	n := 0
	for j, c := range counts {
		if c > 0 {
			n = max(n, displs[j]+c)
		}
	}
	return n
}

// NeighborExchange: count elements of sendbuff go to each of peers; block
// k of recvbuff comes from peers[k].
func NeighborExchange(check Check, sendbuff, recvbuff uintptr, count int, t gccl.DataType, peers []int, s gccl.Stream) ([]engine.Op, error) {
	if err := extent(check, "NeighborExchange", "recvbuff", recvbuff, len(peers)*count, t); err != nil {
		return nil, err
	}
	out := make([]engine.Op, 0, 2*len(peers))
	for k, p := range peers {
		out = append(out, ops.Send(sendbuff, count, t, p, s), ops.Recv(offset(recvbuff, k*count, t), count, t, p, s))
	}
	return out, nil
}

// extent checks that the elems elements of t at p that a pattern's ops
// address together lie inside one live allocation. A nil p, a count the
// ops will refuse (negative, too large) and an unknown type are left to
// the ops' own validation.
func extent(check Check, what, arg string, p uintptr, elems int, t gccl.DataType) error {
	if check == nil || p == 0 || elems <= 0 || !t.Valid() || elems > int(^uint(0)>>1)/t.Size() {
		return nil
	}
	err := check(arg, p, elems*t.Size())
	var ge *gccl.Error
	if err == nil || !errors.As(err, &ge) {
		return err
	}
	return gccl.Errorf(ge.Code, ge.Arg, "%s of %d %v: %s", what, elems, t, ge.Msg)
}

// offset is p advanced by elems elements of t (0 stays 0 so nil checks still fire).
func offset(p uintptr, elems int, t gccl.DataType) uintptr {
	if p == 0 {
		return 0
	}
	return p + uintptr(elems*t.Size())
}
