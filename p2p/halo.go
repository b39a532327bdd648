package p2p

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/ops"
)

// Cart is a Cartesian grid of ranks, as MPI_Cart_create lays it out: rank r
// sits at the coordinates of r in row-major order (the last dimension varies
// fastest), and a dimension marked periodic wraps around. Dims has 1 to 3
// entries whose product is the communicator's size.
type Cart struct {
	Dims     []int
	Periodic []bool // one per dimension; nil: none periodic
}

// Coords returns rank's coordinates in g.
func (g Cart) Coords(rank int) []int {
	return g.coords(rank, make([]int, len(g.Dims)))
}

// coords writes rank's coordinates into c (len(g.Dims) long) and returns it.
func (g Cart) coords(rank int, c []int) []int {
	for d := len(g.Dims) - 1; d >= 0; d-- {
		c[d] = rank % g.Dims[d]
		rank /= g.Dims[d]
	}
	return c
}

// Shift returns the rank disp steps from rank along dimension dim (as
// MPI_Cart_shift), or -1 past the edge of a non-periodic dimension.
func (g Cart) Shift(rank, dim, disp int) int {
	var buf [maxDims]int // no allocation for HaloExchange's grids
	c := buf[:0]
	if len(g.Dims) <= maxDims {
		c = g.coords(rank, buf[:len(g.Dims)])
	} else {
		c = g.Coords(rank)
	}
	c[dim] += disp
	n := g.Dims[dim]
	if c[dim] < 0 || c[dim] >= n {
		if len(g.Periodic) == 0 || !g.Periodic[dim] {
			return -1
		}
		c[dim] = ((c[dim] % n) + n) % n
	}
	r := 0
	for d, x := range c {
		r = r*g.Dims[d] + x
	}
	return r
}

// Neighbors returns the rank on each side of rank, in HaloExchange's order
// of halos: entry 2*d is the lower neighbour in dimension d (Shift(rank, d,
// -1)), entry 2*d+1 the upper one, and -1 past the edge of a non-periodic
// dimension. The neighbour on side i sends its face i^1 into this rank's
// halo i.
func (g Cart) Neighbors(rank int) []int {
	return g.neighbors(rank, make([]int, 0, 2*len(g.Dims)))
}

// neighbors appends Neighbors(rank) to nb.
func (g Cart) neighbors(rank int, nb []int) []int {
	for d := range g.Dims {
		nb = append(nb, g.Shift(rank, d, -1), g.Shift(rank, d, 1))
	}
	return nb
}

// maxDims is the most dimensions HaloExchange takes.
const maxDims = 3

// Halo is the exchange with one neighbour: Count elements at Send (the face
// this rank sends toward the neighbour) and Count elements received from it
// into Recv (the halo on that side). Send and Recv are distinct buffers,
// contiguous: pack strided faces first.
type Halo struct {
	Send, Recv uintptr
	Count      int
}

// HaloExchange exchanges halos with every neighbour of this rank on the
// Cartesian grid g, in one launch (its sends and receives progress
// together, and on GPUs it is one operation that CUDA graphs capture, with
// no host synchronisation). halos[2*d] is the exchange with the lower
// neighbour in dimension d (Shift(rank, d, -1)), halos[2*d+1] with the upper
// one. Faces past the edge of a non-periodic dimension are skipped, their
// buffers untouched. A face sent to the lower neighbour lands in that
// neighbour's upper halo, so its Count must equal the neighbour's upper
// Count (and the reverse). Every rank of the communicator must call it.
//
// Small periodic dimensions work: with 2 ranks both neighbours are one rank
// and with 1 rank a rank is its own neighbour; each face still reaches the
// right halo.
func HaloExchange(c *comm.Comm, g Cart, halos []Halo, t gccl.DataType, s gccl.Stream) error {
	e, err := commlink.Engine(c)
	if err != nil {
		return err
	}
	if err := g.check(e.NRanks(), halos); err != nil {
		return err
	}
	var nbBuf [2 * maxDims]int
	var opBuf [4 * maxDims]engine.Op // a launch on the stack: no allocation
	nb, list := g.neighbors(e.Rank(), nbBuf[:0]), opBuf[:0]
	// One phase per side i (a dimension and a direction): every rank sends
	// its face i toward that side and receives from the opposite side (i^1)
	// into that halo, so the k-th send to a peer meets that peer's k-th
	// receive from this rank even when both neighbours are the same rank.
	for i, out := range halos {
		if to := nb[i]; to >= 0 {
			list = append(list, ops.Send(out.Send, out.Count, t, to, s))
		}
		if from, in := nb[i^1], halos[i^1]; from >= 0 {
			list = append(list, ops.Recv(in.Recv, in.Count, t, from, s))
		}
	}
	return e.Launch(list)
}

// check validates the grid against the communicator's size and the halos.
func (g Cart) check(nranks int, halos []Halo) error {
	if len(g.Dims) < 1 || len(g.Dims) > maxDims {
		return gccl.Errorf(gccl.InvalidArgument, "dims", "%d dimensions; pass 1, 2 or 3", len(g.Dims))
	}
	if len(g.Periodic) != 0 && len(g.Periodic) != len(g.Dims) {
		return gccl.Errorf(gccl.InvalidArgument, "periodic", "%d entries for %d dimensions; pass one per dimension or none", len(g.Periodic), len(g.Dims))
	}
	n := 1
	for d, x := range g.Dims {
		if x < 1 {
			return gccl.Errorf(gccl.InvalidArgument, "dims", "dimension %d has %d ranks; pass 1 or more", d, x)
		}
		n *= x
	}
	if n != nranks {
		return gccl.Errorf(gccl.InvalidArgument, "dims", "the grid %v holds %d ranks, the communicator %d", g.Dims, n, nranks)
	}
	if len(halos) != 2*len(g.Dims) {
		return gccl.Errorf(gccl.InvalidArgument, "halos", "%d halos; pass two per dimension (%d): lower then upper neighbour", len(halos), 2*len(g.Dims))
	}
	for i, h := range halos {
		if h.Count < 0 {
			return gccl.Errorf(gccl.InvalidArgument, "halos", "halo %d has a negative count (%d)", i, h.Count)
		}
	}
	return nil
}
