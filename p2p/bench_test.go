package p2p_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/p2p"
)

// benchSizes are the message sizes of the small-message benchmarks (bytes).
var benchSizes = []int{8, 1 << 10, 4 << 10, 16 << 10, 64 << 10}

// BenchmarkSendRecv measures gccl-perf's sendrecv step with goroutine
// ranks of one host communicator: every rank sends to the next and
// receives from the previous in one group, then synchronizes its stream.
// An iteration is one step on every rank, launched and waited for.
func BenchmarkSendRecv(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("ranks=2/bytes=%d", size), func(b *testing.B) {
			w := colltest.New(b, 2, nil)
			n := w.N()
			send, recv := benchBufs(b, w, size, 1)
			step := func() {
				for r := range n {
					g := group.New()
					g.Send(w.Comms[r], send[r][0], size, gccl.Uint8, (r+1)%n, w.Streams[r])
					g.Recv(w.Comms[r], recv[r][0], size, gccl.Uint8, (r+n-1)%n, w.Streams[r])
					require.NoError(b, g.End())
				}
				w.Sync(b)
			}
			benchLoop(b, size, step)
		})
	}
}

// BenchmarkHalo measures p2p.HaloExchange on a periodic 2x2 grid of 4
// goroutine ranks (gccl-perf -op halo -halo 2x2); size is one face.
func BenchmarkHalo(b *testing.B) {
	g := p2p.Cart{Dims: []int{2, 2}, Periodic: []bool{true, true}}
	for _, size := range benchSizes[1:] {
		b.Run(fmt.Sprintf("grid=2x2/bytes=%d", size), func(b *testing.B) {
			w := colltest.New(b, 4, nil)
			send, recv := benchBufs(b, w, size, 4)
			halos := make([][]p2p.Halo, w.N())
			for r := range halos {
				for i := range 4 {
					halos[r] = append(halos[r], p2p.Halo{Send: send[r][i], Recv: recv[r][i], Count: size})
				}
			}
			step := func() {
				for r := range w.N() {
					require.NoError(b, p2p.HaloExchange(w.Comms[r], g, halos[r], gccl.Uint8, w.Streams[r]))
				}
				w.Sync(b)
			}
			benchLoop(b, size, step)
		})
	}
}

// benchBufs allocates k send and k receive buffers of size bytes per rank.
func benchBufs(b *testing.B, w *colltest.World, size, k int) (send, recv [][]uintptr) {
	rng := rand.New(rand.NewPCG(3, 4))
	send, recv = make([][]uintptr, w.N()), make([][]uintptr, w.N())
	for r := range w.N() {
		for range k {
			s, _ := w.Alloc(b, r, size, rng)
			d, _ := w.Alloc(b, r, size, rng)
			send[r], recv[r] = append(send[r], s), append(recv[r], d)
		}
	}
	return send, recv
}

// benchLoop runs step once to connect the ranks, then times it.
func benchLoop(b *testing.B, size int, step func()) {
	step()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		step()
	}
}
