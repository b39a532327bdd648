// Package pattern builds the grouped send/receive patterns that NCCL
// documents (scatter, gather, all-to-all, neighbour exchange) as engine
// ops, for package p2p, which launches them, and package group, which adds
// them to a group so that they fuse with other operations. Every function
// takes the rank and rank count of the communicator and checks the
// arguments that the ops themselves cannot (root, per-peer vectors).
package pattern

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/ops"
)

// Scatter: rank i receives block i (count elements) of root's sendbuff.
func Scatter(rank, nranks int, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) ([]engine.Op, error) {
	if err := checkRoot(root, nranks); err != nil {
		return nil, err
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
func Gather(rank, nranks int, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) ([]engine.Op, error) {
	if err := checkRoot(root, nranks); err != nil {
		return nil, err
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
func AllToAll(nranks int, sendbuff, recvbuff uintptr, count int, t gccl.DataType, s gccl.Stream) ([]engine.Op, error) {
	counts, displs := make([]int, nranks), make([]int, nranks)
	for i := range nranks {
		counts[i], displs[i] = count, i*count
	}
	return AllToAllv(nranks, sendbuff, counts, displs, recvbuff, counts, displs, t, s)
}

// AllToAllv: sendcounts[j] elements at sdispls[j] go to rank j;
// recvcounts[j] elements from rank j land at rdispls[j] (in elements).
func AllToAllv(nranks int, sendbuff uintptr, sendcounts, sdispls []int, recvbuff uintptr, recvcounts, rdispls []int, t gccl.DataType, s gccl.Stream) ([]engine.Op, error) {
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
	out := make([]engine.Op, 0, 2*nranks)
	for j := range nranks {
		out = append(out,
			ops.Send(offset(sendbuff, sdispls[j], t), sendcounts[j], t, j, s),
			ops.Recv(offset(recvbuff, rdispls[j], t), recvcounts[j], t, j, s))
	}
	return out, nil
}

// NeighborExchange: count elements of sendbuff go to each of peers; block
// k of recvbuff comes from peers[k].
func NeighborExchange(sendbuff, recvbuff uintptr, count int, t gccl.DataType, peers []int, s gccl.Stream) []engine.Op {
	out := make([]engine.Op, 0, 2*len(peers))
	for k, p := range peers {
		out = append(out, ops.Send(sendbuff, count, t, p, s), ops.Recv(offset(recvbuff, k*count, t), count, t, p, s))
	}
	return out
}

// offset is p advanced by elems elements of t (0 stays 0 so nil checks still fire).
func offset(p uintptr, elems int, t gccl.DataType) uintptr {
	if p == 0 {
		return 0
	}
	return p + uintptr(elems*t.Size())
}
