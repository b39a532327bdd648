package gpunet

import (
	"bytes"
	"encoding/binary"
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

// TestGraphReplay: an all-reduce and a ring shift captured into a CUDA
// graph on every rank, replayed 3 times with new inputs between replays:
// each replay computes from the inputs of its time, with no Submit, and
// kicks the proxy once (the graph's host node, graphKick).
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
	kicks := make([]atomic.Int64, n)
	for r := range n {
		kick := w.backs[r].kick
		require.NotNil(t, kick, "rank %d has no proxy kick", r)
		w.backs[r].kick = func() { kicks[r].Add(1); kick() }
	}
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
		before[r] = kicks[r].Load() // the eager Submit's kick
	}
	for replay := range 3 {
		ins := make([][]byte, n)
		sum := make([]byte, 4*count)
		for r := range n {
			ins[r] = make([]byte, 4*count)
			for i := range count {
				binary.LittleEndian.PutUint32(ins[r][4*i:], uint32(i*(r+1)+replay*7))
				binary.LittleEndian.PutUint32(sum[4*i:], binary.LittleEndian.Uint32(sum[4*i:])+uint32(i*(r+1)+replay*7))
			}
			require.NoError(t, w.devs[r].CopyIn(in[r], ins[r]))
			require.NoError(t, w.devs[r].CopyIn(rin[r], ins[r]))
			require.NoError(t, w.devs[r].CopyIn(out[r], bytes.Repeat([]byte{0xA5}, 4*count)))
		}
		for r := range n {
			require.NoError(t, w.fakes[r].GraphLaunch(execs[r], cuda.Stream(w.streams[r])))
		}
		for r := range n {
			require.NoError(t, w.devs[r].Synchronize(w.streams[r]))
			assert.Equal(t, sum, w.out(t, r, out[r], 4*count), "replay %d rank %d all-reduce", replay, r)
			assert.Equal(t, ins[(r+n-1)%n], w.out(t, r, rout[r], 4*count), "replay %d rank %d receive", replay, r)
			require.NoError(t, w.engines[r].AsyncError())
			assert.Equal(t, before[r]+int64(replay+1), kicks[r].Load(), "replay %d rank %d: kicks of the proxy", replay, r)
		}
	}
	for r := range n {
		require.NoError(t, w.fakes[r].GraphExecDestroy(execs[r]))
	}
}
