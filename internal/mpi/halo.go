package mpi

import (
	"time"

	"github.com/gccl/gccl"
)

// Face is one side of a halo exchange (Collectives.Halo): Count elements
// at Send go to Peer, and Count elements from Peer land in Recv. A Peer
// below 0 is no neighbour (the edge of a non-periodic grid): the face is
// skipped and its buffers untouched.
type Face struct {
	Peer       int
	Send, Recv uintptr
	Count      int
}

// Halo is the halo step MPI codes write by hand: an MPI_Irecv from every
// neighbour, an MPI_Isend to every neighbour, then MPI_Waitall, on host
// buffers. faces come in pairs, lower then upper neighbour per dimension
// (as p2p.HaloExchange's halos): face i is sent with tag i and its halo
// comes from the peer's face i^1, so a peer that is the neighbour on both
// sides (a periodic dimension of 2) still fills the right halo. As with
// the collectives, every process must call it, and a call past the
// deadline returns gccl.ErrTimeout with MPI still waiting.
func (c *Collectives) Halo(faces []Face, t gccl.DataType) (time.Duration, error) {
	ct, err := cType(t)
	if err != nil {
		return 0, err
	}
	if len(faces)%2 != 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "faces", "%d faces; pass two per dimension (lower, then upper neighbour)", len(faces))
	}
	for _, f := range faces {
		if f.Peer < 0 {
			continue
		}
		err := firstErr(checkCount("count", f.Count), checkBuf("send", f.Send, f.Count),
			checkBuf("recv", f.Recv, f.Count), c.checkRank("peer", f.Peer))
		if err != nil {
			return 0, err
		}
	}
	return c.run(func(m handle) error { return cHalo(m, faces, ct) })
}
