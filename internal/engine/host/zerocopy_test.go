package host

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/require"
)

// zcCase is one collective run over every rank of a world: inputs are
// random small int32s, outputs are poisoned with random bytes first.
type zcCase struct {
	kind    algo.Kind
	count   int
	root    int
	op      gccl.RedOp
	inPlace bool
}

func (c zcCase) String() string {
	return fmt.Sprintf("%v count=%d root=%d op=%v inplace=%v", c.kind, c.count, c.root, c.op, c.inPlace)
}

// zcBuffers allocates rank r's buffers for c; heap=true takes them from the
// Go heap (not shareable) instead of the host device.
func (w *world) zcBuffers(t *testing.T, c zcCase, r int, rng *rand.Rand, heap bool) (send, recv uintptr, in, out []byte) {
	n := len(w.engines)
	o := engine.Op{Kind: c.kind, Count: c.count, Type: gccl.Int32}
	sendSz, recvSz := o.Sizes(n)
	alloc := func(size int) (uintptr, []byte) {
		if heap {
			b := make([]byte, size)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			t.Cleanup(func() { _ = b[0] }) // keep it alive until the test ends
			return addr(b), b
		}
		return w.alloc(t, r, size, rng)
	}
	if !c.inPlace {
		send, in = alloc(sendSz)
		recv, out = alloc(recvSz)
		smallInts(in, rng)
		return send, recv, in, out
	}
	big := max(sendSz, recvSz)
	p, b := alloc(big)
	smallInts(b, rng)
	switch c.kind {
	case algo.AllGather: // send is this rank's block of recv
		return p + uintptr(r*sendSz), p, b[r*sendSz : (r+1)*sendSz], b
	case algo.ReduceScatter: // recv is this rank's block of send
		return p, p + uintptr(r*recvSz), b, b[r*recvSz : (r+1)*recvSz]
	}
	return p, p, b, b
}

// zcWant is the expected output of rank r, computed with int32 arithmetic.
func zcWant(c zcCase, n, r int, ins [][]byte, before []byte) []byte {
	red := func(off, cnt int) []byte {
		out := make([]byte, 4*cnt)
		for i := range cnt {
			acc := i32(ins[0], off+i)
			for j := 1; j < n; j++ {
				v := i32(ins[j], off+i)
				switch c.op {
				case gccl.Max:
					acc = max(acc, v)
				default:
					acc += v
				}
			}
			if c.op == gccl.Avg {
				acc /= int32(n)
			}
			putI32(out, i, acc)
		}
		return out
	}
	switch c.kind {
	case algo.AllReduce:
		return red(0, c.count)
	case algo.Reduce:
		if r != c.root {
			return before
		}
		return red(0, c.count)
	case algo.ReduceScatter:
		return red(r*c.count, c.count)
	case algo.AllGather:
		return bytes.Join(ins, nil)
	}
	return ins[c.root]
}

func putI32(b []byte, i int, v int32) {
	b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// runZC runs c on every rank and checks every element of every output.
// heapRank >= 0 gives that rank Go-heap buffers (forcing the fallback).
func (w *world) runZC(t *testing.T, c zcCase, rng *rand.Rand, heapRank int) {
	t.Helper()
	n := len(w.engines)
	ins, outs, befores := make([][]byte, n), make([][]byte, n), make([][]byte, n)
	ops := make([]engine.Op, n)
	for r := range n {
		sp, rp, in, out := w.zcBuffers(t, c, r, rng, r == heapRank)
		ins[r], outs[r] = bytes.Clone(in), out
		befores[r] = bytes.Clone(out)
		ops[r] = engine.Op{Kind: c.kind, Send: sp, Recv: rp, Count: c.count, Type: gccl.Int32, Op: c.op, Root: c.root, Stream: w.streams[r]}
	}
	for r, e := range w.engines {
		require.NoError(t, e.Launch([]engine.Op{ops[r]}), "%v rank %d", c, r)
	}
	w.sync(t)
	for r := range n {
		want := zcWant(c, n, r, ins, befores[r])
		require.Len(t, outs[r], len(want))
		if bytes.Equal(want, outs[r]) { // every element; the loop below names the first wrong one
			continue
		}
		for i := 0; i < len(want); i += 4 {
			require.Equal(t, i32(want, i/4), i32(outs[r], i/4), "%v: rank %d element %d", c, r, i/4)
		}
	}
}

func (w *world) zcRuns() uint64 {
	var total uint64
	for _, b := range w.backends {
		total += b.zc.runs
	}
	return total
}

var zcKinds = []algo.Kind{algo.AllReduce, algo.Reduce, algo.ReduceScatter, algo.AllGather, algo.Broadcast}

func TestZeroCopyAllKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 2, 3, 4, 5} {
		w := newWorld(t, n, "zerocopy")
		for _, b := range w.backends {
			require.NotNil(t, b.zc, "n=%d: zero-copy must be set up between in-process ranks", n)
		}
		runs := uint64(0)
		for _, kind := range zcKinds {
			for _, count := range []int{1, n + 1, 4099, 20000 + rng.IntN(20000)} {
				for _, inPlace := range []bool{false, true} {
					op := []gccl.RedOp{gccl.Sum, gccl.Max, gccl.Avg}[rng.IntN(3)]
					w.runZC(t, zcCase{kind: kind, count: count, root: rng.IntN(n), op: op, inPlace: inPlace}, rng, -1)
					runs += uint64(n)
					require.Equal(t, runs, w.zcRuns(), "n=%d %v: the zero-copy path must have run", n, kind)
				}
			}
		}
	}
}

// TestZeroCopyMapped runs the schedules with peers mapping each other's
// regions as separate processes do, and checks the mapping cache.
func TestZeroCopyMapped(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	w := newWorld(t, 3, "")
	for _, b := range w.backends {
		for p := range b.zc.maps {
			b.zc.maps[p].mapSelf = true
		}
	}
	for _, kind := range zcKinds {
		w.runZC(t, zcCase{kind: kind, count: areaBytes/4 + rng.IntN(5000), root: rng.IntN(3), op: gccl.Sum, inPlace: rng.IntN(2) == 0}, rng, -1)
	}
	for r, b := range w.backends {
		for p := range b.zc.maps {
			require.LessOrEqual(t, len(b.zc.maps[p].entries), maxMapsPerPeer, "rank %d peer %d", r, p)
			if p != r {
				require.NotEmpty(t, b.zc.maps[p].entries, "rank %d has mapped nothing of peer %d", r, p)
			}
		}
	}
	// More regions than the cache holds: entries are evicted, results stay right.
	for range maxMapsPerPeer + 3 {
		w.runZC(t, zcCase{kind: algo.AllReduce, count: areaBytes/4 + 257, op: gccl.Sum}, rng, -1)
	}
	for _, b := range w.backends {
		for p := range b.zc.maps {
			require.LessOrEqual(t, len(b.zc.maps[p].entries), maxMapsPerPeer)
		}
	}
}

// TestZeroCopyFallback gives one rank buffers that peers cannot map: every
// rank must fall back to the step schedules together, with right results.
func TestZeroCopyFallback(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	w := newWorld(t, 4, "")
	for _, kind := range zcKinds {
		c := zcCase{kind: kind, count: areaBytes/4 + 3001, root: 1, op: gccl.Sum}
		w.runZC(t, c, rng, 1)
		require.Zero(t, w.zcRuns(), "%v: a heap buffer on rank 1 must force the fallback", kind)
	}
	// Rank 3's heap buffers are only its own business in a Broadcast from 0.
	w.runZC(t, zcCase{kind: algo.Broadcast, count: areaBytes / 2, root: 0}, rng, 3)
	require.Equal(t, uint64(4), w.zcRuns())
	// Small operations go through the copy-in areas: heap buffers anywhere are fine.
	for _, kind := range zcKinds {
		w.runZC(t, zcCase{kind: kind, count: 999, root: 1, op: gccl.Max, inPlace: kind == algo.AllGather}, rng, 1)
	}
	require.Equal(t, uint64(4+4*len(zcKinds)), w.zcRuns())
	require.Equal(t, uint64(len(zcKinds)), w.backends[0].zc.copyIns)
	// With zerocopy excluded, nothing takes it.
	w2 := newWorld(t, 2, "^zerocopy")
	w2.runZC(t, zcCase{kind: algo.AllReduce, count: 100, op: gccl.Sum}, rng, -1)
	require.Zero(t, w2.zcRuns())
}

// TestZeroCopyPeerMissing: a rank that never launches makes the others time
// out at the first barrier; a rank that aborts makes them fail with
// ErrRemote long before the deadline.
func TestZeroCopyPeerMissing(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, abort := range []bool{false, true} {
		timeout := 300 * time.Millisecond
		if abort {
			timeout = 20 * time.Second
		}
		w := newWorldTimeout(t, 3, "", timeout)
		for r := range 2 {
			p, _ := w.alloc(t, r, 4096, rng)
			require.NoError(t, w.engines[r].Launch([]engine.Op{{Kind: algo.AllReduce, Send: p, Recv: p, Count: 1024, Type: gccl.Int32, Stream: w.streams[r]}}))
		}
		start := time.Now()
		if abort {
			time.Sleep(20 * time.Millisecond)
			require.NoError(t, w.engines[2].Abort())
		}
		for r := range 2 {
			err := w.devs[r].Synchronize(w.streams[r])
			if abort {
				require.ErrorIs(t, err, gccl.ErrRemote, "rank %d", r)
			} else {
				require.ErrorIs(t, err, gccl.ErrTimeout, "rank %d", r)
			}
		}
		require.Less(t, time.Since(start), 5*time.Second)
	}
}

// TestDescriptorRoundTrip writes random descriptors and random garbage into
// a control block: what is read back is what was written, or "not ok", and
// never a name or offset outside its bounds.
func TestDescriptorRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	c := ctlBlock{make([]byte, ctlBytes)}
	for i := range 2000 {
		parity, which := uint32(rng.IntN(4)), rng.IntN(2)
		if i%2 == 0 {
			name := make([]byte, rng.IntN(descBytes-descName+1))
			for k := range name {
				name[k] = byte('a' + rng.IntN(26))
			}
			d := bufDesc{ok: true, pid: rng.Uint32(), base: uintptr(rng.Uint64()), size: 1 + rng.IntN(1<<30),
				ino: rng.Uint64(), name: string(name)}
			d.off = rng.IntN(d.size + 1)
			c.putDesc(parity, which, d)
			require.Equal(t, d, c.getDesc(parity, which))
			continue
		}
		b := c.desc(parity, which)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		b[0], b[1], b[2], b[3] = 1, 0, 0, 0
		d := c.getDesc(parity, which)
		if d.ok {
			require.LessOrEqual(t, len(d.name), descBytes-descName)
			require.Positive(t, d.size)
			require.GreaterOrEqual(t, d.off, 0)
			require.LessOrEqual(t, d.off, d.size)
		}
	}
}
