package p2p_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/p2p"
)

func TestCartCoordsAndShift(t *testing.T) {
	g := p2p.Cart{Dims: []int{2, 3, 4}, Periodic: []bool{true, false, true}}
	assert.Equal(t, []int{1, 2, 3}, g.Coords(23))
	assert.Equal(t, []int{0, 1, 2}, g.Coords(6))
	assert.Equal(t, 18, g.Shift(6, 0, -1), "periodic wrap in dimension 0")
	assert.Equal(t, -1, g.Shift(6, 1, -2), "past the edge of a non-periodic dimension")
	assert.Equal(t, 10, g.Shift(6, 1, 1))
	assert.Equal(t, 4, g.Shift(6, 2, 2), "periodic wrap in dimension 2")
	assert.Equal(t, []int{18, 18, 2, 10, 5, 7}, g.Neighbors(6), "lower then upper, per dimension")
	assert.Equal(t, []int{-1, 1}, p2p.Cart{Dims: []int{3}}.Neighbors(0), "none past a non-periodic edge")
	one := p2p.Cart{Dims: []int{1}, Periodic: []bool{true}}
	assert.Equal(t, 0, one.Shift(0, 0, -1), "a single periodic rank is its own neighbour")
}

// haloGrids are 1-, 2- and 3-D grids of 2 to 4 ranks, periodic or not,
// including dimensions of 1 and 2 ranks (a neighbour on both sides is one rank).
var haloGrids = []p2p.Cart{
	{Dims: []int{1, 1}, Periodic: []bool{true, true}},
	{Dims: []int{3}},
	{Dims: []int{4}, Periodic: []bool{true}},
	{Dims: []int{2, 2}},
	{Dims: []int{2, 2}, Periodic: []bool{true, true}},
	{Dims: []int{3, 1}, Periodic: []bool{false, true}},
	{Dims: []int{1, 3}, Periodic: []bool{true, true}},
	{Dims: []int{2, 1, 2}, Periodic: []bool{true, false, true}},
	{Dims: []int{1, 2, 2}},
	{Dims: []int{2, 2, 1}, Periodic: []bool{true, true, true}},
}

func TestHaloExchange(t *testing.T) {
	for _, g := range haloGrids {
		n := 1
		for _, x := range g.Dims {
			n *= x
		}
		w := colltest.New(t, n, nil)
		rng := rand.New(rand.NewPCG(uint64(n), uint64(len(g.Dims))))
		// count of the faces of dimension d: distinct per dimension, so a
		// face landing in the wrong dimension's halo shows.
		count := func(d int) int { return 1009 + 37*d }
		send, recv := make([][]buf, n), make([][]buf, n)
		halos := make([][]p2p.Halo, n)
		for r := range n {
			for i := range 2 * len(g.Dims) {
				nb := 4 * count(i/2)
				s, v := buf{}, buf{}
				s.p, s.b = w.Alloc(t, r, nb, rng)
				v.p, v.b = w.Alloc(t, r, nb, rng)
				send[r], recv[r] = append(send[r], s), append(recv[r], v)
				halos[r] = append(halos[r], p2p.Halo{Send: s.p, Recv: v.p, Count: count(i / 2)})
			}
		}
		before := make([][][]byte, n) // the poison, to show skipped halos untouched
		for r := range n {
			for _, v := range recv[r] {
				before[r] = append(before[r], append([]byte(nil), v.b...))
			}
		}
		for r := range n {
			require.NoError(t, p2p.HaloExchange(w.Comms[r], g, halos[r], gccl.Float32, w.Streams[r]), "grid %v rank %d", g, r)
		}
		w.Sync(t)
		for r := range n {
			for i := range halos[r] {
				d, dir := i/2, 2*(i%2)-1
				q := g.Shift(r, d, dir)
				if q < 0 {
					equal(t, recv[r][i].b, before[r][i], "grid %v rank %d halo %d (edge) was written", g, r, i)
					continue
				}
				// q sent this rank its face toward -dir: its halo index i^1.
				equal(t, recv[r][i].b, send[q][i^1].b, "grid %v rank %d halo %d from rank %d", g, r, i, q)
			}
		}
	}
}

func TestHaloExchangeBadInput(t *testing.T) {
	w := colltest.New(t, 2, nil)
	h := make([]p2p.Halo, 4)
	for name, g := range map[string]p2p.Cart{
		"size":     {Dims: []int{3, 1}},
		"zero":     {Dims: []int{0, 2}},
		"4-D":      {Dims: []int{2, 1, 1, 1}},
		"periodic": {Dims: []int{2, 1}, Periodic: []bool{true}},
	} {
		err := p2p.HaloExchange(w.Comms[0], g, h, gccl.Float32, w.Streams[0])
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, name)
	}
	err := p2p.HaloExchange(w.Comms[0], p2p.Cart{Dims: []int{2}}, h, gccl.Float32, w.Streams[0])
	require.ErrorIs(t, err, gccl.ErrInvalidArgument, "4 halos for 1 dimension")
	err = p2p.HaloExchange(w.Comms[0], p2p.Cart{Dims: []int{2, 1}}, []p2p.Halo{{}, {}, {Count: -1}, {}}, gccl.Float32, w.Streams[0])
	require.ErrorIs(t, err, gccl.ErrInvalidArgument, "negative count")
}
