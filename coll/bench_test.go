package coll_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// BenchmarkAllReduce measures float32 Sum AllReduce with 4 goroutine ranks
// for each algorithm (GCCL_ALGO) and size; bytes/s is the algorithm
// bandwidth (buffer bytes over time), as nccl-tests' algbw.
func BenchmarkAllReduce(b *testing.B) {
	for _, algo := range []string{"ring", "tree", "direct"} {
		for _, size := range []int{1 << 20, 16 << 20} {
			b.Run(fmt.Sprintf("algo=%s/bytes=%d", algo, size), func(b *testing.B) {
				b.Cleanup(func() { env.Reload() })
				b.Setenv("GCCL_ALGO", algo)
				require.Equal(b, algo, env.Reload().Algos.String())
				benchAllReduce(b, 4, size)
			})
		}
	}
}

func benchAllReduce(b *testing.B, n, size int) {
	w := colltest.New(b, n, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	count := size / 4
	bufs := make([]uintptr, n)
	for r := range n {
		p, v := w.Alloc(b, r, size, rng)
		reduce.Fill(v, gccl.Float32, rng)
		bufs[r] = p
	}
	launch := func() {
		for r := range n {
			require.NoError(b, coll.AllReduce(w.Comms[r], bufs[r], bufs[r], count, gccl.Float32, gccl.Sum, w.Streams[r]))
		}
		w.Sync(b)
	}
	launch() // connect
	b.SetBytes(int64(size))
	b.ResetTimer()
	for b.Loop() {
		launch()
	}
}

// BenchmarkAllReduceSmall measures a 1 KiB float32 Sum AllReduce with 4
// goroutine ranks and the default algorithm choice: the launch path and
// the hand-offs between ranks, not the bandwidth.
func BenchmarkAllReduceSmall(b *testing.B) {
	b.ReportAllocs()
	benchAllReduce(b, 4, 1<<10)
}

// BenchmarkAllReduceSockets measures a float32 Sum AllReduce of 2 goroutine
// ranks over the socket provider on loopback (GCCL_SHM_DISABLE=1), the
// path of 1 rank per host across 2 hosts: small sizes measure the
// hand-offs on the network path, large ones its bandwidth.
func BenchmarkAllReduceSockets(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) {
			b.Cleanup(func() { env.Reload() })
			b.Setenv("GCCL_SHM_DISABLE", "1")
			require.True(b, env.Reload().SHMDisable)
			b.ReportAllocs()
			benchAllReduce(b, 2, size)
		})
	}
}
