package gpunet

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestSendRecv: on 4 ranks, every rank sends to every rank (itself
// included) several pieces of different sizes (0 included) in one launch,
// more pieces to one peer than one step holds, then a ring shift in a
// later launch over the connections made by the first; every byte checked.
func TestSendRecv(t *testing.T) {
	runSendRecv(t, newWorld(t, 4, 8*4096, 2, 30*time.Second), rand.New(rand.NewPCG(7, 8)))
}

// runSendRecv is TestSendRecv's pattern on w.
func runSendRecv(t *testing.T, w *world, rng *rand.Rand) {
	t.Helper()
	n := w.n
	size := func(from, to, k int) int { return []int{0, 1, 4097, 33000, 5}[(from+2*to+k)%5] }
	pieces := func(from, to int) int {
		if from == 0 && to == 1 {
			return maxDirPieces + 3 // spans two steps
		}
		return 2
	}
	want := map[[3]int][]byte{}
	recvAt := map[[3]int]uintptr{}
	ops := make([][]engine.Op, n)
	for r := range n {
		for to := range n {
			for k := range pieces(r, to) {
				b := make([]byte, size(r, to, k))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				want[[3]int{r, to, k}] = b
				ops[r] = append(ops[r], engine.Op{Kind: algo.P2PSend, Send: w.buf(t, r, b), Count: len(b), Type: gccl.Uint8, Peer: to, Stream: w.streams[r]})
			}
		}
		for from := range n {
			for k := range pieces(from, r) {
				p := w.buf(t, r, bytes.Repeat([]byte{0xA5}, size(from, r, k)))
				recvAt[[3]int{from, r, k}] = p
				ops[r] = append(ops[r], engine.Op{Kind: algo.P2PRecv, Recv: p, Count: size(from, r, k), Type: gccl.Uint8, Peer: from, Stream: w.streams[r]})
			}
		}
	}
	w.launch(t, ops)
	for key, b := range want {
		require.Equal(t, b, w.out(t, key[1], recvAt[key], len(b)), "rank %d piece %d to rank %d", key[0], key[2], key[1])
	}
	// A ring shift over the existing connections.
	for r := range n {
		b := make([]byte, 100000)
		for i := range b {
			b[i] = byte(r + i)
		}
		want[[3]int{r, 0, 0}] = b
		ops[r] = []engine.Op{
			{Kind: algo.P2PRecv, Recv: w.buf(t, r, make([]byte, len(b))), Count: len(b), Type: gccl.Uint8, Peer: (r + n - 1) % n, Stream: w.streams[r]},
			{Kind: algo.P2PSend, Send: w.buf(t, r, b), Count: len(b), Type: gccl.Uint8, Peer: (r + 1) % n, Stream: w.streams[r]},
		}
	}
	w.launch(t, ops)
	for r := range n {
		require.Equal(t, want[[3]int{(r + n - 1) % n, 0, 0}], w.out(t, r, ops[r][0].Recv, 100000), "rank %d", r)
	}
}
