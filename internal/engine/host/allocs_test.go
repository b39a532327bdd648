package host

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/require"
)

// maxLaunchAllocs bounds the allocations of one rank's small Send/Recv
// launch and its stream synchronisation on the host backend (the engine,
// the host stream and the shared-memory transport). What remains is the
// stream's worker goroutine, started again when the stream was idle
// (where waits spin, the worker waits for the next launch instead).
// Raise it only with a reason: every other allocation on this path was
// taken out once.
const maxLaunchAllocs = 1

// TestLaunchAllocations: a small Send/Recv exchange between two ranks,
// launched and synchronised, allocates at most maxLaunchAllocs per rank.
func TestLaunchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const n, count = 2, 256
	w := newWorld(t, n, "")
	rng := rand.New(rand.NewPCG(7, 8))
	ops := make([][]engine.Op, n)
	for r := range n {
		sp, _ := w.alloc(t, r, count, rng)
		rp, _ := w.alloc(t, r, count, rng)
		ops[r] = []engine.Op{
			{Kind: algo.P2PSend, Send: sp, Count: count, Type: gccl.Uint8, Peer: 1 - r, Stream: w.streams[r]},
			{Kind: algo.P2PRecv, Recv: rp, Count: count, Type: gccl.Uint8, Peer: 1 - r, Stream: w.streams[r]},
		}
	}
	step := func() {
		for r := range n {
			if err := w.engines[r].Launch(ops[r]); err != nil {
				panic(err)
			}
		}
		for r := range n {
			if err := w.devs[r].Synchronize(w.streams[r]); err != nil {
				panic(err)
			}
		}
	}
	step() // connects
	allocs := testing.AllocsPerRun(500, step) / n
	t.Logf("%.2f allocations per rank's launch and synchronisation", allocs)
	require.LessOrEqual(t, allocs, float64(maxLaunchAllocs))
}
