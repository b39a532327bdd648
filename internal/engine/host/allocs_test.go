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
// the host stream and the shared-memory transport). None remain: the
// stream's worker parks between launches instead of being started again.
// Raise it only with a reason: every allocation on this path was taken
// out once.
const maxLaunchAllocs = 1

// TestLaunchAllocations: a small Send/Recv exchange between two ranks,
// launched and synchronised, allocates at most maxLaunchAllocs per rank.
func TestLaunchAllocations(t *testing.T) {
	allocs := opsAllocs(t, 2, "", 256, func(r int, sp, rp uintptr) []engine.Op {
		return []engine.Op{
			{Kind: algo.P2PSend, Send: sp, Count: 256, Type: gccl.Uint8, Peer: 1 - r},
			{Kind: algo.P2PRecv, Recv: rp, Count: 256, Type: gccl.Uint8, Peer: 1 - r},
		}
	})
	t.Logf("%.2f allocations per rank's launch and synchronisation", allocs)
	require.LessOrEqual(t, allocs, float64(maxLaunchAllocs))
}

// maxCollectiveAllocs bounds the allocations of one rank's small
// collective, repeated, over the message path (not zero-copy): the plan,
// its peers and the runner are kept from the last one, and the runner's
// receives make no closures (what remains is the reduction's closure,
// Backend.arith).
const maxCollectiveAllocs = 1

// TestCollectiveAllocations: a repeated small AllReduce of two ranks over
// the step schedule, launched and synchronised, allocates at most
// maxCollectiveAllocs per rank.
func TestCollectiveAllocations(t *testing.T) {
	allocs := opsAllocs(t, 2, "direct", 8*256, func(r int, sp, rp uintptr) []engine.Op {
		return []engine.Op{{Kind: algo.AllReduce, Send: sp, Recv: rp, Count: 256, Type: gccl.Float64, Op: gccl.Sum}}
	})
	t.Logf("%.2f allocations per rank's collective and synchronisation", allocs)
	require.LessOrEqual(t, allocs, float64(maxCollectiveAllocs))
}

// maxHaloAllocs bounds the allocations of one rank's 2x2 halo launch (8
// ops: more than a launch holds inline, engine.launchInline) and its
// synchronisation: the launch keeps its ops' storage for the next.
const maxHaloAllocs = 0

// TestHaloAllocations: a repeated 2x2 halo exchange of 1 KiB faces
// between four ranks, launched and synchronised, allocates at most
// maxHaloAllocs per rank.
func TestHaloAllocations(t *testing.T) {
	const face = 1 << 10
	allocs := opsAllocs(t, 4, "", 4*face, func(r int, sp, rp uintptr) []engine.Op {
		var ops []engine.Op
		nb := neighbours2x2(r)
		for i := range 4 {
			at := uintptr(i * face)
			ops = append(ops,
				engine.Op{Kind: algo.P2PSend, Send: sp + at, Count: face, Type: gccl.Uint8, Peer: nb[i]},
				engine.Op{Kind: algo.P2PRecv, Recv: rp + at, Count: face, Type: gccl.Uint8, Peer: nb[i^1]})
		}
		return ops
	})
	t.Logf("%.2f allocations per rank's halo and synchronisation", allocs)
	require.LessOrEqual(t, allocs, float64(maxHaloAllocs))
}

// opsAllocs makes n ranks allowed algoList, each with a send and a
// receive buffer of the given bytes, launches mk's ops of each rank (on
// its stream) and synchronises once, to connect, then returns the
// allocations per rank of doing it again.
func opsAllocs(t *testing.T, n int, algoList string, bytes int, mk func(r int, sp, rp uintptr) []engine.Op) float64 {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	w := newWorld(t, n, algoList)
	rng := rand.New(rand.NewPCG(7, 8))
	ops := make([][]engine.Op, n)
	for r := range n {
		sp, _ := w.alloc(t, r, bytes, rng)
		rp, _ := w.alloc(t, r, bytes, rng)
		ops[r] = mk(r, sp, rp)
		for i := range ops[r] {
			ops[r][i].Stream = w.streams[r]
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
	return testing.AllocsPerRun(500, step) / float64(n)
}
