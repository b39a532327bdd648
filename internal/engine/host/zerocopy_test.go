package host

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestZeroCopyWired checks that the backend opens the zero-copy path
// between in-process ranks and that its collectives take it: a large one
// mapped, a small one copied in; a rank whose buffers peers cannot map
// makes every rank run the step schedule, with right results; excluded by
// GCCL_ALGO, nothing takes it. Package zerocopy tests the path itself.
func TestZeroCopyWired(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	w := newWorld(t, 3, "")
	w.allReduce(t, rng, 20000, false, -1) // 80 KB: beyond the copy-in areas
	w.allReduce(t, rng, 999, true, -1)
	w.allReduce(t, rng, 20001, false, 1) // rank 1's heap buffers: the step schedule
	for r, b := range w.backends {
		require.NotNil(t, b.zc, "rank %d: zero-copy must be set up between in-process ranks", r)
		ops, copyIns := b.zc.Runs()
		require.Equal(t, [2]uint64{2, 1}, [2]uint64{ops, copyIns}, "rank %d: zero-copy runs, copy-in runs", r)
	}
	w2 := newWorld(t, 2, "^zerocopy")
	w2.allReduce(t, rng, 20000, false, -1)
	w2.allReduce(t, rng, 100, false, -1)
	for r, b := range w2.backends {
		ops, _ := b.zc.Runs()
		require.Zero(t, ops, "rank %d: zerocopy is excluded", r)
	}
}
