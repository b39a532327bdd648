package gpu

import (
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamsKeepIssueOrder: one communicator's operations run in issue
// order whatever streams they go to. Rank 0's first all-gather waits on a
// gated stream and the later ones alternate between two streams: their
// kernels must still run first to last (unchained, the second ran at
// once, and on real GPUs met the peer's first).
func TestStreamsKeepIssueOrder(t *testing.T) {
	const ops = 5
	rs := zeroCopyWorld(t, 2)
	base, _ := chunks(t, rs)
	x := rs[0]
	var mu sync.Mutex
	var ran []uintptr // rank 0's kernels, by input pointer, as they ran
	x.f.RegisterKernel(kernels.AllGather, func(_ *cudafake.Fake, _, _ cuda.Dim3, a *cuda.Args) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, decodeWholeComm(a.Arg(0)).In[0])
		return nil
	})
	var ss []gccl.Stream
	for range 2 {
		s, err := x.d.NewStream()
		require.NoError(t, err)
		ss = append(ss, s)
	}
	open := x.gate(t, ss[0])
	var want []uintptr
	for i := range ops {
		x.gather(t, base[0], i, ss[i%2])
		want = append(want, base[0]+uintptr(8192*i))
	}
	open()
	for _, s := range ss {
		require.NoError(t, x.d.Synchronize(s))
	}
	require.NoError(t, x.e.AsyncError())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, want, ran, "rank 0's kernels in the order they ran")
}
