package gpunet

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// proxyUse counts a rank's kicks of its proxy and the holds taken and
// released (graphHold).
type proxyUse struct{ kicks, holds, releases atomic.Int64 }

// watchProxies wraps every rank's kick and hold with counters.
func watchProxies(t *testing.T, w *world) []*proxyUse {
	t.Helper()
	use := make([]*proxyUse, w.n)
	for r := range w.n {
		u := &proxyUse{}
		use[r] = u
		b := w.backs[r]
		kick, hold := b.kick, b.hold
		require.NotNil(t, kick, "rank %d has no proxy kick", r)
		require.NotNil(t, hold, "rank %d has no proxy hold", r)
		b.kick = func() { u.kicks.Add(1); kick() }
		b.hold = func() func() {
			u.holds.Add(1)
			release := hold()
			return func() { u.releases.Add(1); release() }
		}
	}
	return use
}

// waitReleases waits until rank r released want holds (user objects'
// destructors run asynchronously, as the driver's do).
func waitReleases(t *testing.T, u *proxyUse, r int, want int64, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for u.releases.Load() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, want, u.releases.Load(), "rank %d: holds released %s", r, what)
}

// TestGraphReplay: an all-reduce and a ring shift captured into a CUDA
// graph on every rank (two launches of one capture: one proxy hold),
// replayed 3 times with new random inputs between replays: each replay
// computes from the inputs of its time, with no Submit and no kick (no
// host node in the graph); the hold is released once the graph and its
// executable are destroyed.
func TestGraphReplay(t *testing.T) {
	runGraphReplay(t, newWorld(t, 3, 8*4096, 2, 20*time.Second))
}

// runGraphReplay is TestGraphReplay on w.
func runGraphReplay(t *testing.T, w *world) {
	t.Helper()
	const count = 30000
	n := w.n
	in, out, rin, rout := make([]uintptr, n), make([]uintptr, n), make([]uintptr, n), make([]uintptr, n)
	execs := make([]cuda.GraphExec, n)
	var wg sync.WaitGroup
	use := watchProxies(t, w)
	for r := range n {
		in[r], out[r] = w.buf(t, r, make([]byte, 4*count)), w.buf(t, r, make([]byte, 4*count))
		rin[r], rout[r] = w.buf(t, r, make([]byte, 4*count)), w.buf(t, r, make([]byte, 4*count))
	}
	for r := range n {
		wg.Go(func() {
			s := cuda.Stream(w.streams[r])
			require.NoError(t, w.fakes[r].StreamBeginCapture(s, cuda.CaptureModeRelaxed))
			assert.NoError(t, w.engines[r].Launch([]engine.Op{
				{Kind: algo.AllReduce, Send: in[r], Recv: out[r], Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]},
			}))
			assert.NoError(t, w.engines[r].Launch([]engine.Op{
				{Kind: algo.P2PSend, Send: rin[r], Count: count, Type: gccl.Int32, Peer: (r + 1) % n, Stream: w.streams[r]},
				{Kind: algo.P2PRecv, Recv: rout[r], Count: count, Type: gccl.Int32, Peer: (r + n - 1) % n, Stream: w.streams[r]},
			}))
			graph, err := w.fakes[r].StreamEndCapture(s)
			require.NoError(t, err)
			execs[r], err = w.fakes[r].GraphInstantiate(graph)
			require.NoError(t, err)
			require.NoError(t, w.fakes[r].GraphDestroy(graph))
		})
	}
	wg.Wait()
	before := make([]int64, n)
	for r := range n {
		before[r] = use[r].kicks.Load() // the Submits' kicks
		assert.Equal(t, int64(1), use[r].holds.Load(), "rank %d: holds taken by a capture of two launches", r)
		assert.Equal(t, int64(0), use[r].releases.Load(), "rank %d: holds released with the executable alive", r)
	}
	rng := rand.New(rand.NewPCG(20, uint64(n)))
	for replay := range 3 {
		ins := make([][]byte, n)
		sum := make([]byte, 4*count)
		for r := range n {
			ins[r] = make([]byte, 4*count)
			for i := range count {
				v := rng.Uint32()
				binary.LittleEndian.PutUint32(ins[r][4*i:], v)
				binary.LittleEndian.PutUint32(sum[4*i:], binary.LittleEndian.Uint32(sum[4*i:])+v)
			}
			require.NoError(t, w.devs[r].CopyIn(in[r], ins[r]))
			require.NoError(t, w.devs[r].CopyIn(rin[r], ins[r]))
			require.NoError(t, w.devs[r].CopyIn(out[r], bytes.Repeat([]byte{0xA5}, 4*count)))
			require.NoError(t, w.devs[r].CopyIn(rout[r], bytes.Repeat([]byte{0x5A}, 4*count)))
		}
		for r := range n {
			require.NoError(t, w.fakes[r].GraphLaunch(execs[r], cuda.Stream(w.streams[r])))
		}
		for r := range n {
			require.NoError(t, w.devs[r].Synchronize(w.streams[r]))
			assert.Equal(t, sum, w.out(t, r, out[r], 4*count), "replay %d rank %d all-reduce", replay, r)
			assert.Equal(t, ins[(r+n-1)%n], w.out(t, r, rout[r], 4*count), "replay %d rank %d receive", replay, r)
			require.NoError(t, w.engines[r].AsyncError())
			assert.Equal(t, before[r], use[r].kicks.Load(), "replay %d rank %d: kicks of the proxy (a host node's)", replay, r)
		}
	}
	for r := range n {
		require.NoError(t, w.fakes[r].GraphExecDestroy(execs[r]))
	}
	for r := range n {
		waitReleases(t, use[r], r, 1, "once the graph and its executable are destroyed")
		assert.Equal(t, int64(1), use[r].holds.Load(), "rank %d: holds", r)
	}
}

// TestGraphHoldPerCapture: each capture sequence takes a hold of its own,
// however many launches it captures, released when its graph and every
// executable of it are gone; an eager launch takes none.
func TestGraphHoldPerCapture(t *testing.T) {
	const count = 1000
	w := newWorld(t, 2, 8*4096, 2, 20*time.Second)
	use := watchProxies(t, w)
	n := w.n
	bufs := make([]uintptr, n)
	for r := range n {
		bufs[r] = w.buf(t, r, make([]byte, 4*count))
	}
	allReduce := func(r int) []engine.Op {
		return []engine.Op{{Kind: algo.AllReduce, Send: bufs[r], Recv: bufs[r], Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]}}
	}
	captured := func(r, launches int) cuda.Graph {
		s := cuda.Stream(w.streams[r])
		require.NoError(t, w.fakes[r].StreamBeginCapture(s, cuda.CaptureModeRelaxed))
		for range launches {
			require.NoError(t, w.engines[r].Launch(allReduce(r)))
		}
		g, err := w.fakes[r].StreamEndCapture(s)
		require.NoError(t, err)
		return g
	}
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			assert.NoError(t, w.engines[r].Launch(allReduce(r)))
			assert.NoError(t, w.devs[r].Synchronize(w.streams[r]))
		})
	}
	wg.Wait()
	for r := range n {
		assert.Equal(t, int64(0), use[r].holds.Load(), "rank %d: holds taken by an eager launch", r)
		a := captured(r, 3)
		assert.Equal(t, int64(1), use[r].holds.Load(), "rank %d: holds after a capture of 3 launches", r)
		b := captured(r, 1)
		assert.Equal(t, int64(2), use[r].holds.Load(), "rank %d: holds after a second capture", r)
		exec, err := w.fakes[r].GraphInstantiate(a)
		require.NoError(t, err)
		require.NoError(t, w.fakes[r].GraphDestroy(a))
		require.NoError(t, w.fakes[r].GraphDestroy(b))
		waitReleases(t, use[r], r, 1, "with the second graph destroyed")
		require.NoError(t, w.fakes[r].GraphExecDestroy(exec))
		waitReleases(t, use[r], r, 2, "with the first graph's executable destroyed too")
	}
}
