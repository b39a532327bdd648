package host

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/require"
)

// halo2x2 is one launch per rank of a halo exchange on a periodic 2x2
// grid of 4 ranks, as p2p.HaloExchange issues it: in phase i every rank
// sends its face i to its neighbour on side i and receives from the
// neighbour on side i^1 into its halo i. Both neighbours in a dimension
// are one rank, so each rank sends two faces to each of two peers.
type halo2x2 struct {
	ops          [4][]engine.Op
	faces, halos [4][4][]byte // per rank, per side
}

// neighbours2x2 is rank r's neighbour on each side (lower, upper in
// dimension 0, then in dimension 1) of the periodic 2x2 grid.
func neighbours2x2(r int) [4]int { return [4]int{r ^ 2, r ^ 2, r ^ 1, r ^ 1} }

// newHalo2x2 allocates random faces and poisoned halos of face bytes per
// rank and side, and each rank's launch.
func newHalo2x2(t *testing.T, w *world, face int, rng *rand.Rand) *halo2x2 {
	h := &halo2x2{}
	for r := range 4 {
		nb := neighbours2x2(r)
		for i := range 4 {
			var sp, rp uintptr
			sp, h.faces[r][i] = w.alloc(t, r, face, rng)
			rp, h.halos[r][i] = w.poisoned(t, r, face, rng)
			h.ops[r] = append(h.ops[r],
				engine.Op{Kind: algo.P2PSend, Send: sp, Count: face, Type: gccl.Uint8, Peer: nb[i], Stream: w.streams[r]},
				engine.Op{Kind: algo.P2PRecv, Recv: rp, Count: face, Type: gccl.Uint8, Peer: nb[i^1], Stream: w.streams[r]})
		}
	}
	return h
}

// round refills the faces with random bytes, poisons the halos, launches
// every rank's exchange and synchronises, then checks every byte: halo i
// of rank r holds face i of r's neighbour on side i^1.
func (h *halo2x2) round(t *testing.T, w *world, rng *rand.Rand) {
	for r := range 4 {
		for i := range 4 {
			for k := range h.faces[r][i] {
				h.faces[r][i][k], h.halos[r][i][k] = byte(rng.Uint32()), 0xA5
			}
		}
	}
	for r := range 4 {
		require.NoError(t, w.engines[r].Launch(h.ops[r]))
	}
	w.sync(t)
	var outs []outcome
	for r := range 4 {
		nb := neighbours2x2(r)
		for i := range 4 {
			outs = append(outs, outcome{what: fmt.Sprintf("rank %d halo %d", r, i), want: h.faces[nb[i^1]][i], got: h.halos[r][i]})
		}
	}
	check(t, outs)
}

// TestHaloInline: a 2x2 halo of 64 KiB faces (512 KiB sent and received
// per rank), issue 17's slowest case against Open MPI, runs its lanes one
// after the other on one goroutine (fitsNow: no goroutine per lane, and
// it starts on the caller), and every byte lands in the right halo; with
// faces too large for that the lanes run on goroutines, right too.
func TestHaloInline(t *testing.T) {
	for _, c := range []struct {
		face   int
		inline bool
	}{{64 << 10, true}, {1 << 10, true}, {200_003, false}} {
		t.Run(fmt.Sprintf("face=%d", c.face), func(t *testing.T) {
			w := newWorld(t, 4, "")
			rng := rand.New(rand.NewPCG(17, uint64(c.face)))
			h := newHalo2x2(t, w, c.face, rng)
			h.round(t, w, rng) // connects
			for r := range 4 {
				b := w.backends[r]
				b.p2p.sort(h.ops[r], r)
				require.Equal(t, c.inline, b.fitsNow(b.p2p.lanes), "rank %d: lanes inline", r)
			}
			for range 5 {
				h.round(t, w, rng)
			}
		})
	}
}
