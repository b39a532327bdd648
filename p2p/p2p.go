package p2p

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/internal/engine"
)

// Send sends count elements at sendbuff to peer.
func Send(c coll.Comm, sendbuff uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) error {
	return launch(c, []engine.Op{{Kind: engine.Send, Send: sendbuff, Count: count, Type: t, Peer: peer, Stream: s}})
}

// Recv receives count elements from peer into recvbuff.
func Recv(c coll.Comm, recvbuff uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) error {
	return launch(c, []engine.Op{{Kind: engine.Recv, Recv: recvbuff, Count: count, Type: t, Peer: peer, Stream: s}})
}

func launch(c coll.Comm, ops []engine.Op) error {
	e, err := coll.EngineOf(c)
	if err != nil {
		return err
	}
	return e.Launch(ops)
}

// Scatter sends block i (count elements at sendbuff + i*count*size) of
// root's sendbuff to rank i's recvbuff. sendbuff is only read on root.
func Scatter(c coll.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) error {
	e, err := coll.EngineOf(c)
	if err != nil {
		return err
	}
	ops := []engine.Op{{Kind: engine.Recv, Recv: recvbuff, Count: count, Type: t, Peer: root, Stream: s}}
	if e.Rank() == root {
		for i := range e.NRanks() {
			ops = append(ops, engine.Op{Kind: engine.Send, Send: offset(sendbuff, i*count, t), Count: count, Type: t, Peer: i, Stream: s})
		}
	}
	return checkedRoot(e, root, ops)
}

// Gather collects count elements of every rank's sendbuff into root's
// recvbuff, rank i's at offset i*count. recvbuff is only written on root.
func Gather(c coll.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) error {
	e, err := coll.EngineOf(c)
	if err != nil {
		return err
	}
	ops := []engine.Op{{Kind: engine.Send, Send: sendbuff, Count: count, Type: t, Peer: root, Stream: s}}
	if e.Rank() == root {
		for i := range e.NRanks() {
			ops = append(ops, engine.Op{Kind: engine.Recv, Recv: offset(recvbuff, i*count, t), Count: count, Type: t, Peer: i, Stream: s})
		}
	}
	return checkedRoot(e, root, ops)
}

func checkedRoot(e *engine.Engine, root int, ops []engine.Op) error {
	if root < 0 || root >= e.NRanks() {
		return gccl.Errorf(gccl.InvalidArgument, "root", "root %d is not a rank of this %d-rank communicator", root, e.NRanks())
	}
	return e.Launch(ops)
}

// AllToAll sends block j (count elements) of sendbuff to rank j, which
// stores it as block i of its recvbuff, for every pair of ranks i, j.
func AllToAll(c coll.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, s gccl.Stream) error {
	e, err := coll.EngineOf(c)
	if err != nil {
		return err
	}
	n := e.NRanks()
	counts, displs := make([]int, n), make([]int, n)
	for i := range n {
		counts[i], displs[i] = count, i*count
	}
	return AllToAllv(c, sendbuff, counts, displs, recvbuff, counts, displs, t, s)
}

// AllToAllv is AllToAll with per-peer counts and displacements (in
// elements), as MPI_Alltoallv: sendcounts[j] elements at sdispls[j] go to
// rank j, recvcounts[j] elements from rank j land at rdispls[j].
func AllToAllv(c coll.Comm, sendbuff uintptr, sendcounts, sdispls []int, recvbuff uintptr, recvcounts, rdispls []int, t gccl.DataType, s gccl.Stream) error {
	e, err := coll.EngineOf(c)
	if err != nil {
		return err
	}
	n := e.NRanks()
	for name, v := range map[string][]int{"sendcounts": sendcounts, "sdispls": sdispls, "recvcounts": recvcounts, "rdispls": rdispls} {
		if len(v) != n {
			return gccl.Errorf(gccl.InvalidArgument, name, "has %d entries; want one per rank (%d)", len(v), n)
		}
		for j, x := range v {
			if x < 0 {
				return gccl.Errorf(gccl.InvalidArgument, name, "entry %d is negative (%d)", j, x)
			}
		}
	}
	ops := make([]engine.Op, 0, 2*n)
	for j := range n {
		ops = append(ops,
			engine.Op{Kind: engine.Send, Send: offset(sendbuff, sdispls[j], t), Count: sendcounts[j], Type: t, Peer: j, Stream: s},
			engine.Op{Kind: engine.Recv, Recv: offset(recvbuff, rdispls[j], t), Count: recvcounts[j], Type: t, Peer: j, Stream: s})
	}
	return e.Launch(ops)
}

// NeighborExchange sends count elements of sendbuff to each rank in peers
// and receives count elements from each into recvbuff, block k from
// peers[k]. Every listed peer must list this rank in turn.
func NeighborExchange(c coll.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, peers []int, s gccl.Stream) error {
	e, err := coll.EngineOf(c)
	if err != nil {
		return err
	}
	ops := make([]engine.Op, 0, 2*len(peers))
	for k, p := range peers {
		ops = append(ops,
			engine.Op{Kind: engine.Send, Send: sendbuff, Count: count, Type: t, Peer: p, Stream: s},
			engine.Op{Kind: engine.Recv, Recv: offset(recvbuff, k*count, t), Count: count, Type: t, Peer: p, Stream: s})
	}
	return e.Launch(ops)
}

// offset is p advanced by elems elements of t (0 stays 0 so nil checks still fire).
func offset(p uintptr, elems int, t gccl.DataType) uintptr {
	if p == 0 {
		return 0
	}
	return p + uintptr(elems*t.Size())
}
