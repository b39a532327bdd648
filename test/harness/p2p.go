package harness

import "fmt"

// P2PKinds are the point-to-point patterns a Case can be. Their Count is
// the elements of one block (one peer's share); Root and Peer choose the
// ranks:
//   - sendrecv: rank Root sends one block to rank Peer (one Send and one
//     Recv; a rank sending to itself does both in one group);
//   - shift: every rank sends a block to rank+Peer and receives one from
//     rank-Peer (Peer 0: each rank to itself);
//   - alltoall: block j of sendbuff to rank j, as block i of its recvbuff;
//   - alltoallv: alltoall where rank i sends VCount(i, j) elements to rank j,
//     from block j of sendbuff into block i of j's recvbuff (the rest of
//     each block stays as it was);
//   - neighbor: the same block to each ring neighbour (rank-1 and rank+1,
//     once each), block k of recvbuff from the k-th;
//   - scatter, gather: p2p.Scatter and p2p.Gather from and to Root.
var P2PKinds = []string{"sendrecv", "shift", "alltoall", "alltoallv", "neighbor", "scatter", "gather"}

// IsP2P reports whether kind is one of P2PKinds.
func IsP2P(kind string) bool {
	for _, k := range P2PKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// Transfer is one Send or Recv of a point-to-point Case: count elements
// with peer, at element offset Off of sendbuff (a send) or recvbuff (a
// receive).
type Transfer struct{ Peer, Off, Count int }

// Transfers returns the sends and receives of rank in an nranks-rank
// communicator, in the order they are posted: the k-th send from a rank to
// a peer matches that peer's k-th receive from the rank.
func (c Case) Transfers(rank, nranks int) (sends, recvs []Transfer) {
	n := c.Count
	all := func(count func(from, to int) int) {
		for j := range nranks {
			sends = append(sends, Transfer{j, j * n, count(rank, j)})
			recvs = append(recvs, Transfer{j, j * n, count(j, rank)})
		}
	}
	switch c.Kind {
	case "sendrecv":
		if rank == c.Root {
			sends = append(sends, Transfer{c.Peer, 0, n})
		}
		if rank == c.Peer {
			recvs = append(recvs, Transfer{c.Root, 0, n})
		}
	case "shift":
		sends = []Transfer{{(rank + c.Peer) % nranks, 0, n}}
		recvs = []Transfer{{(rank - c.Peer%nranks + nranks) % nranks, 0, n}}
	case "alltoall":
		all(func(int, int) int { return n })
	case "alltoallv":
		all(c.VCount)
	case "neighbor":
		for k, p := range Neighbors(rank, nranks) {
			sends = append(sends, Transfer{p, 0, n})
			recvs = append(recvs, Transfer{p, k * n, n})
		}
	case "scatter":
		if rank == c.Root {
			for j := range nranks {
				sends = append(sends, Transfer{j, j * n, n})
			}
		}
		recvs = []Transfer{{c.Root, 0, n}}
	case "gather":
		sends = []Transfer{{c.Root, 0, n}}
		if rank == c.Root {
			for j := range nranks {
				recvs = append(recvs, Transfer{j, j * n, n})
			}
		}
	default:
		panic("harness: not a point-to-point kind: " + c.Kind)
	}
	return sends, recvs
}

// VCount is the number of elements rank from sends to rank to in an
// alltoallv: 0, a third, two thirds or all of Count, varying with the pair
// and the seed.
func (c Case) VCount(from, to int) int {
	return c.Count * int((uint64(from*3+to*5)+c.Seed)%4) / 3
}

// Neighbors are rank's peers in a neighbor exchange: its ring neighbours,
// each once, never itself.
func Neighbors(rank, nranks int) []int {
	switch nranks {
	case 1:
		return nil
	case 2:
		return []int{1 - rank}
	}
	return []int{(rank + nranks - 1) % nranks, (rank + 1) % nranks}
}

// p2pSizes returns the byte lengths of sendbuff and recvbuff of a
// point-to-point Case, the same on every rank.
func (c Case) p2pSizes(nranks int) (send, recv int) {
	n := c.Count * c.T.Size()
	switch c.Kind {
	case "alltoall", "alltoallv":
		return n * nranks, n * nranks
	case "neighbor":
		return n, n * len(Neighbors(0, nranks))
	case "scatter":
		return n * nranks, n
	case "gather":
		return n, n * nranks
	}
	return n, n
}

// p2pExpected is rank's recvbuff after a point-to-point Case: each receive
// holds the matching send of its peer, and the bytes no receive writes
// keep Poison.
func (c Case) p2pExpected(rank, nranks int) []byte {
	sendLen, recvLen := c.p2pSizes(nranks)
	in := Inputs(c.Seed, nranks, c.T, sendLen/c.T.Size())
	out := PoisonBytes(recvLen)
	size := c.T.Size()
	_, recvs := c.Transfers(rank, nranks)
	taken := map[int]int{} // receives from each peer so far
	for _, r := range recvs {
		sends, _ := c.Transfers(r.Peer, nranks)
		k := taken[r.Peer]
		taken[r.Peer]++
		s, ok := nthTo(sends, rank, k)
		if !ok || s.Count != r.Count {
			panic(fmt.Sprintf("harness: %v: rank %d's receive %d from %d has no matching send", c, rank, k, r.Peer))
		}
		copy(out[r.Off*size:], in[r.Peer][s.Off*size:(s.Off+s.Count)*size])
	}
	return out
}

// nthTo returns the k-th transfer of ts with peer.
func nthTo(ts []Transfer, peer, k int) (Transfer, bool) {
	for _, t := range ts {
		if t.Peer == peer {
			if k == 0 {
				return t, true
			}
			k--
		}
	}
	return Transfer{}, false
}

// Exact reports whether the result of c must equal the reference byte for
// byte: integer types, and any type that is only moved, not computed with.
func (c Case) Exact() bool { return !Reduces(c.Kind) || !c.T.IsFloat() }
