package host

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/require"
)

// The tests here mix launches that start on the caller's goroutine (small
// Send/Recv launches onto an idle stream: their sends go at once, their
// receives are held for a Synchronize) with launches that do not: large
// ones, ones queued behind others, collectives, a second stream of the
// same communicator. Several are in flight between synchronisations,
// every output is poisoned first and every byte checked.

// outcome is a launch's result to check once its stream is synchronised.
type outcome struct {
	what      string
	want, got []byte
}

// poisoned returns a receive buffer of n bytes filled with 0xA5.
func (w *world) poisoned(t *testing.T, r, n int, rng *rand.Rand) (uintptr, []byte) {
	p, b := w.alloc(t, r, n, rng)
	for i := range b {
		b[i] = 0xA5
	}
	return p, b
}

// exchange launches, on every rank r's stream in streams, one launch that
// sends n random bytes to rank r+1 and receives n from rank r-1.
func (w *world) exchange(t *testing.T, rng *rand.Rand, n int, streams []gccl.Stream) []outcome {
	size := len(w.engines)
	sent := make([][]byte, size)
	var out []outcome
	for r := range size {
		sp, sb := w.alloc(t, r, n, rng)
		rp, rb := w.poisoned(t, r, n, rng)
		sent[r] = append([]byte(nil), sb...)
		require.NoError(t, w.engines[r].Launch([]engine.Op{
			{Kind: algo.P2PSend, Send: sp, Count: n, Type: gccl.Uint8, Peer: (r + 1) % size, Stream: streams[r]},
			{Kind: algo.P2PRecv, Recv: rp, Count: n, Type: gccl.Uint8, Peer: (r + size - 1) % size, Stream: streams[r]},
		}))
		out = append(out, outcome{what: fmt.Sprintf("exchange of %d bytes into rank %d", n, r), got: rb})
	}
	for r := range out {
		out[r].want = sent[(r+size-1)%size]
	}
	return out
}

// launchCollective launches a collective of kind with count int32 elements per
// rank (Sum where it reduces; root where it has one) on every rank's
// stream in streams, random inputs, poisoned outputs.
func (w *world) launchCollective(t *testing.T, rng *rand.Rand, kind algo.Kind, count, root int, streams []gccl.Stream) []outcome {
	size := len(w.engines)
	in := make([][]byte, size)
	var out []outcome
	for r := range size {
		o := engine.Op{Kind: kind, Count: count, Type: gccl.Int32, Op: gccl.Sum, Root: root, Stream: streams[r]}
		ns, nr := o.Sizes(size)
		var sb []byte
		o.Send, sb = w.alloc(t, r, ns, rng)
		smallInts(sb, rng)
		in[r] = append([]byte(nil), sb...)
		var rb []byte
		o.Recv, rb = w.poisoned(t, r, nr, rng)
		require.NoError(t, w.engines[r].Launch([]engine.Op{o}))
		if kind != algo.Reduce || r == root {
			out = append(out, outcome{what: fmt.Sprintf("%v of %d int32 on rank %d", kind, count, r), got: rb})
		}
	}
	sum := func(off int) []byte { // Σ over ranks of in[r][off:off+4*count]
		s := make([]byte, 4*count)
		for r := range size {
			for i := range count {
				binary.LittleEndian.PutUint32(s[4*i:], uint32(i32(s, i)+i32(in[r][off:], i)))
			}
		}
		return s
	}
	for i := range out {
		r := i
		if kind == algo.Reduce {
			r = root
		}
		switch kind {
		case algo.AllReduce, algo.Reduce:
			out[i].want = sum(0)
		case algo.ReduceScatter:
			out[i].want = sum(4 * count * r)
		case algo.Broadcast:
			out[i].want = in[root]
		case algo.AllGather:
			out[i].want = bytes.Join(in, nil)
		}
	}
	return out
}

// kinds are the collectives the tests launch.
var kinds = []algo.Kind{algo.AllReduce, algo.Broadcast, algo.Reduce, algo.AllGather, algo.ReduceScatter}

// check compares every outcome.
func check(t *testing.T, outs []outcome) {
	t.Helper()
	for _, o := range outs {
		require.True(t, bytes.Equal(o.want, o.got), "%s: wrong bytes", o.what)
	}
}

// sizes are exchange sizes: within one shared-memory slot, in several,
// and over inlineBytes (lanes on goroutines).
var sizes = []int{1, 7, 1000, 4096, 65539, 300_001, 600_001}

// TestLaunchesInFlight: runs of launches per rank with no synchronisation
// between them (exchanges of mixed sizes and collectives, all on one
// stream), every rank synchronised at random points, on 2 and 3 ranks,
// with the direct schedules (whose sends start on the caller) and ring.
func TestLaunchesInFlight(t *testing.T) {
	for _, n := range []int{2, 3} {
		for _, algos := range []string{"direct", "ring"} {
			t.Run(fmt.Sprintf("ranks=%d/%s", n, algos), func(t *testing.T) {
				launchesInFlight(t, n, algos)
			})
		}
	}
}

func launchesInFlight(t *testing.T, n int, algos string) {
	w := newWorld(t, n, algos)
	rng := rand.New(rand.NewPCG(uint64(n), 21))
	var outs []outcome
	for range 60 {
		if rng.IntN(3) == 0 {
			kind := kinds[rng.IntN(len(kinds))]
			outs = append(outs, w.launchCollective(t, rng, kind, 1+rng.IntN(3000), rng.IntN(n), w.streams)...)
		} else {
			outs = append(outs, w.exchange(t, rng, sizes[rng.IntN(len(sizes))], w.streams)...)
		}
		switch rng.IntN(5) {
		case 0:
			w.sync(t)
			check(t, outs)
			outs = outs[:0]
		case 1:
			_, err := w.devs[0].Query(w.streams[0])
			require.NoError(t, err)
		}
	}
	w.sync(t)
	check(t, outs)
}

// TestTwoStreamsInFlight: each rank launches on two streams of one
// communicator, in the same order everywhere; a launch on one stream
// waits for an earlier launch held on the other, which must be released
// to the worker. Streams are synchronised in either order.
func TestTwoStreamsInFlight(t *testing.T) {
	const n = 2
	w := newWorld(t, n, "")
	other := make([]gccl.Stream, n)
	for r := range n {
		s, err := w.devs[r].NewStream()
		require.NoError(t, err)
		other[r] = s
		t.Cleanup(func() { require.NoError(t, w.devs[r].DestroyStream(s)) })
	}
	rng := rand.New(rand.NewPCG(5, 22))
	for range 40 {
		var outs []outcome
		for range 1 + rng.IntN(4) {
			streams := w.streams
			if rng.IntN(2) == 0 {
				streams = other
			}
			outs = append(outs, w.exchange(t, rng, sizes[rng.IntN(4)], streams)...)
		}
		first, second := other, w.streams
		if rng.IntN(2) == 0 {
			first, second = second, first
		}
		for _, ss := range [][]gccl.Stream{first, second} {
			for r := range n {
				require.NoError(t, w.devs[r].Synchronize(ss[r]), "rank %d", r)
			}
		}
		check(t, outs)
	}
}
