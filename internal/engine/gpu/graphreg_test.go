package gpu

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGraphRegistration: an all-reduce past the push kernel's sizes,
// captured on every rank (global capture mode) with buffers nobody
// registered, runs zero-copy on registrations made for the graph: nothing
// staged, eager kernel choice untouched (Collective stays 0), the capture
// mode relaxed and restored around the registration; the graph replays
// with fresh random inputs into poisoned outputs, every element checked;
// destroying the graph and its executable releases the registrations.
func TestGraphRegistration(t *testing.T) {
	const n = 2
	count := gpuplan.PushMax/4 + 5 // int32, past the push kernel
	rs := regWorld(t, n)
	rng := rand.New(rand.NewPCG(21, 22))
	sends, recvs, graphs := captureAllReduce(t, rs, count, func(int, uintptr, uintptr) {})
	for r, x := range rs {
		st := x.e.Stats()
		assert.Equal(t, uint64(1), st.ZeroCopyOps, "rank %d", r)
		assert.Zero(t, st.StagedBytes, "rank %d", r)
		assert.Zero(t, x.regs.Collective(), "rank %d: graph registrations must not change eager kernels", r)
		for _, p := range []uintptr{sends[r], recvs[r]} {
			reg, _, ok := x.regs.Lookup(p, 4*count)
			require.True(t, ok, "rank %d", r)
			assert.True(t, reg.Graph)
		}
		assert.Equal(t, 2, x.f.CaptureModeExchanges(), "rank %d: relaxed, then restored", r)
	}
	execs := make([]cuda.GraphExec, n)
	for r, x := range rs {
		var err error
		execs[r], err = x.f.GraphInstantiate(graphs[r])
		require.NoError(t, err)
		require.NoError(t, x.f.GraphDestroy(graphs[r]))
	}
	for range 3 {
		in := make([][]byte, n)
		for r, x := range rs {
			in[r], _ = randInt32s(rng, count)
			x.put(t, sends[r], in[r])
			x.put(t, recvs[r], bytes.Repeat([]byte{0xA5}, 4*count))
		}
		for r, x := range rs {
			require.NoError(t, x.f.GraphLaunch(execs[r], cuda.Stream(x.s)))
		}
		for _, x := range rs { // every rank's kernel writes every rank's output
			require.NoError(t, x.d.Synchronize(x.s))
		}
		for r, x := range rs {
			require.Equal(t, sumInt32(in, 0, count), x.get(t, recvs[r], 4*count), "rank %d", r)
		}
	}
	for r, x := range rs {
		require.NoError(t, x.f.GraphExecDestroy(execs[r]))
		assert.Eventually(t, func() bool {
			_, _, ok := x.regs.Lookup(sends[r], 4*count)
			return !ok
		}, 5*time.Second, 5*time.Millisecond, "rank %d: released with the graph", r)
	}
}

// TestGraphRegistrationFailureReleases: when a captured all-reduce's
// receive buffer cannot be registered (its IPC handle fails on every rank)
// after its send buffer was, the operation stages on every rank and the
// send buffer's registration, which nothing holds, is released at once
// instead of living until the communicator is destroyed.
func TestGraphRegistrationFailureReleases(t *testing.T) {
	const n = 2
	count := gpuplan.PushMax/4 + 5 // int32, past the push kernel
	rs := regWorld(t, n)
	stagedStandIns(rs)
	sends, recvs, graphs := captureAllReduce(t, rs, count, func(r int, _, recv uintptr) { rs[r].drv.failIPC.Store(recv) })
	for r, x := range rs {
		assert.Zero(t, x.e.Stats().ZeroCopyOps, "rank %d", r)
		assert.NotZero(t, x.e.Stats().StagedBytes, "rank %d", r)
		for i, p := range []uintptr{sends[r], recvs[r]} {
			_, _, ok := x.regs.Lookup(p, 4*count)
			assert.False(t, ok, "rank %d buffer %d: no registration may outlive the failed agreement", r, i)
		}
		require.NoError(t, x.f.GraphDestroy(graphs[r]))
	}
}

// captureAllReduce allocates every rank's send and receive buffers of
// count int32, calls prepare(r) with them, then captures an out-of-place
// all-reduce on every rank at once (global capture mode) and returns the
// buffers and the captured graphs.
func captureAllReduce(t *testing.T, rs []*regRank, count int, prepare func(r int, send, recv uintptr)) (sends, recvs []uintptr, graphs []cuda.Graph) {
	n := len(rs)
	sends, recvs = make([]uintptr, n), make([]uintptr, n)
	for r, x := range rs {
		var err error
		sends[r], err = x.d.Alloc(4 * count)
		require.NoError(t, err)
		recvs[r], err = x.d.Alloc(4 * count)
		require.NoError(t, err)
		t.Cleanup(func() { _ = x.d.Free(sends[r]); _ = x.d.Free(recvs[r]) })
		prepare(r, sends[r], recvs[r])
	}
	graphs = make([]cuda.Graph, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, x := range rs {
		wg.Go(func() {
			if errs[r] = x.f.StreamBeginCapture(cuda.Stream(x.s), cuda.CaptureModeGlobal); errs[r] != nil {
				return
			}
			errs[r] = x.e.Launch([]engine.Op{{Kind: algo.AllReduce, Count: count, Type: gccl.Int32, Op: gccl.Sum, Send: sends[r], Recv: recvs[r], Stream: x.s}})
			var err error
			graphs[r], err = x.f.StreamEndCapture(cuda.Stream(x.s))
			if errs[r] == nil {
				errs[r] = err
			}
		})
	}
	wg.Wait()
	for r := range rs {
		require.NoError(t, errs[r], "rank %d", r)
	}
	return sends, recvs, graphs
}
