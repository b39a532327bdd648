package host

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/require"
)

// smallInts fills b with int32 values in [-1000, 1000] so sums stay exact.
func smallInts(b []byte, rng *rand.Rand) {
	for i := 0; i+4 <= len(b); i += 4 {
		binary.LittleEndian.PutUint32(b[i:], uint32(int32(rng.IntN(2001)-1000)))
	}
}

func i32(b []byte, i int) int32 { return int32(binary.LittleEndian.Uint32(b[4*i:])) }

func TestAllReduceInt32(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 3, 5} {
		for _, a := range []string{"ring", "tree", "direct"} {
			t.Run(fmt.Sprintf("n=%d/%s", n, a), func(t *testing.T) {
				w := newWorld(t, n, a)
				for _, count := range []int{0, 1, n - 1, 5003} {
					for _, inPlace := range []bool{false, true} {
						w.allReduce(t, rng, count, inPlace, -1)
					}
				}
			})
		}
	}
}

// allReduce runs an int32 Sum AllReduce of count elements on every rank
// and checks every element of every output. heapRank >= 0 gives that rank
// Go-heap buffers, which peers cannot map.
func (w *world) allReduce(t *testing.T, rng *rand.Rand, count int, inPlace bool, heapRank int) {
	t.Helper()
	n := len(w.engines)
	sends := make([][]byte, n)
	recvs := make([][]byte, n)
	ops := make([]engine.Op, n)
	for r := range n {
		alloc := func() (uintptr, []byte) { return w.alloc(t, r, 4*count, rng) }
		if r == heapRank {
			alloc = func() (uintptr, []byte) {
				b := make([]byte, 4*count)
				t.Cleanup(func() { runtime.KeepAlive(b) }) // the backend sees only its address
				return uintptr(unsafe.Pointer(unsafe.SliceData(b))), b
			}
		}
		sp, sb := alloc()
		smallInts(sb, rng)
		rp, rb := sp, sb
		if !inPlace {
			rp, rb = alloc()
		}
		sends[r], recvs[r] = append([]byte(nil), sb...), rb
		ops[r] = engine.Op{Kind: algo.AllReduce, Send: sp, Recv: rp, Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]}
	}
	for r, e := range w.engines {
		require.NoError(t, e.Launch([]engine.Op{ops[r]}))
	}
	w.sync(t)
	for i := range count {
		var want int32
		for r := range n {
			want += i32(sends[r], i)
		}
		for r := range n {
			require.Equal(t, want, i32(recvs[r], i), "n=%d count=%d inplace=%v rank %d elem %d", n, count, inPlace, r, i)
		}
	}
}
