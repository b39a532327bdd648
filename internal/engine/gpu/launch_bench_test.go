package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/peermem"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// launchRank is one rank of the launch benchmark: an engine on the full GPU
// backend (peer-mapped buffers) over its own fake GPU, whose one-shot
// kernel is a stand-in that checks its arguments and counts launches.
type launchRank struct {
	e        *engine.Engine
	g        *Backend
	d        *device.CUDADevice
	s        gccl.Stream
	launches atomic.Int64
	poisoned bool // a test failed its stream on purpose
	// want is what the stand-in expects: the op's buffers and count.
	want struct{ send, recv, count atomic.Uint64 }
}

// directDriver is the fake GPU with kernel launches checked and counted in
// the call instead of queued on a stream (no copy of the arguments, no
// stream goroutine), so that a benchmark on it times gccl's own host path.
type directDriver struct {
	*cudafake.Fake
	kernel cudafake.Kernel
}

func (d directDriver) LaunchKernel(fn cuda.Function, grid, block cuda.Dim3, _ int, _ cuda.Stream, a *cuda.Args) error {
	if fn == 0 {
		return fmt.Errorf("directDriver: nil function")
	}
	return d.kernel(d.Fake, grid, block, a)
}

// launchWorld builds n engines on fake GPUs with the GPU backend made by
// hand (the fatbin is not needed: the fake loads any image) and the peers'
// buffers mapped through the fake's IPC, as newGPUBackend does. With
// direct, launches run the stand-in kernel in the call (directDriver).
func launchWorld(tb testing.TB, n int, direct bool) []*launchRank {
	tb.Helper()
	net := enginetest.NewNet(n)
	rs := make([]*launchRank, n)
	gs := make([]*Backend, n)
	offers := make([]peermem.Offer, n)
	boots := make([]*enginetest.Boot, n)
	for r := range n {
		boots[r] = net.Rank(r)
		f := cudafake.New(cudafake.Config{MemBytes: 256 << 20})
		lr := &launchRank{}
		var drv cuda.Driver = f
		if k := registerCheckingKernel(f, lr, n, r); direct {
			drv = directDriver{Fake: f, kernel: k}
		}
		d := openGPU(tb, drv)
		lr.d = d
		var err error
		lr.s, err = d.NewStream()
		require.NoError(tb, err)
		rs[r] = lr
		g := newBackendState(d, testSetup(r, n, boots[r], d), Config{})
		require.NoError(tb, d.Do(func() error {
			if err := g.allocate([]byte("stand-in kernels")); err != nil {
				return err
			}
			offers[r], err = peermem.NewOffer(g.drv, d.Ordinal(), topo.HostHash(), g.buf, g.set.BufBytes())
			return err
		}))
		gs[r], lr.g = g, g
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			boot := boots[r]
			if rs[r].e, errs[r] = engine.New(engine.Config{Rank: r, NRanks: n, Boot: boot, Device: rs[r].d,
				Timeout: 10 * time.Second, Backend: use(gs[r])}); errs[r] != nil {
				return
			}
			errs[r] = gs[r].exchange(context.Background(), boot, offers[r])
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(tb, err, "rank %d", r)
		gs[r].setBase()
	}
	tb.Cleanup(func() {
		for _, r := range rs {
			if err := r.e.Close(); !r.poisoned {
				assert.NoError(tb, err)
			}
			assert.NoError(tb, r.d.Close())
		}
	})
	return rs
}

// registerCheckingKernel makes the float32 sum one-shot kernel a stand-in
// that fails the stream unless it gets rank me's Comm (its buffers, the LL
// scratch of every rank) and the expected count, and counts its launches.
// It returns the stand-in.
func registerCheckingKernel(f *cudafake.Fake, lr *launchRank, n, me int) cudafake.Kernel {
	k := func(f *cudafake.Fake, grid, block cuda.Dim3, a *cuda.Args) error {
		c, count, bits, ptr := decodeWholeComm(a.Arg(0)), a.Uint64(1), a.Uint64(2), a.Uint64(3)
		ok := int(c.Rank) == me && int(c.NRanks) == n && count == lr.want.count.Load() && bits == 0 && ptr == 0 &&
			uint64(c.In[me]) == lr.want.send.Load() && uint64(c.Out[me]) == lr.want.recv.Load() &&
			block.X == kernels.Threads && grid.X >= 1 && a.Len() == 4
		for r := range n {
			ok = ok && c.Scratch[r] != 0 && c.Flags[r] != 0
		}
		ok = ok && c.Counters != 0 && c.AbortFlag != 0 && c.Status != 0 && c.TimeoutNs == uint64(10*time.Second) &&
			c.ScratchBytes == gpuplan.DirectBytes
		if !ok {
			return fmt.Errorf("one-shot stand-in on rank %d: unexpected launch %+v count %d scalar %#x at %#x grid %v", me, c, count, bits, ptr, grid)
		}
		lr.launches.Add(1)
		return nil
	}
	f.RegisterKernel("gccl_allreduce_oneshot_f32_sum", k)
	return k
}

// decodeWholeComm reads every field of kernels.DevComm back from its encoding.
func decodeWholeComm(b []byte) kernels.DevComm {
	le := binary.LittleEndian
	var c kernels.DevComm
	for i := range kernels.MaxRanks {
		for j, arr := range []*[kernels.MaxRanks]uintptr{&c.In, &c.Out, &c.Scratch, &c.Flags} {
			arr[i] = uintptr(le.Uint64(b[8*(j*kernels.MaxRanks+i):]))
		}
	}
	w := b[4*kernels.MaxRanks*8:]
	c.Counters, c.AbortFlag, c.Status = uintptr(le.Uint64(w)), uintptr(le.Uint64(w[8:])), uintptr(le.Uint64(w[16:]))
	c.TimeoutNs, c.ScratchBytes = le.Uint64(w[24:]), le.Uint64(w[32:])
	c.NRanks, c.Rank, c.Root, c.Key = int32(le.Uint32(w[40:])), int32(le.Uint32(w[44:])), int32(le.Uint32(w[48:])), le.Uint32(w[52:])
	return c
}

// launchOps are k all-reduces of count float32 on rank r's stream, each in
// place on its own buffer.
func (lr *launchRank) launchOps(tb testing.TB, k, count int) []engine.Op {
	tb.Helper()
	ops := make([]engine.Op, k)
	p, err := lr.d.Alloc(4 * count * k)
	require.NoError(tb, err)
	for i := range ops {
		buf := p + uintptr(4*count*i)
		ops[i] = engine.Op{Kind: algo.AllReduce, Send: buf, Recv: buf, Count: count, Type: gccl.Float32, Op: gccl.Sum, Stream: lr.s}
	}
	lr.want.send.Store(uint64(p)) // every op of the benchmark uses the first buffer
	lr.want.recv.Store(uint64(p))
	lr.want.count.Store(uint64(count))
	return ops
}

// benchLaunch measures one Launch of k all-reduces of 2 float32 (8 bytes,
// the one-shot path) per iteration, alternating between the two ranks; the
// stand-in kernels check every launch's arguments and the count at the end.
func benchLaunch(b *testing.B, k int, direct bool) {
	rs := launchWorld(b, 2, direct)
	ops := make([][]engine.Op, len(rs))
	for r, lr := range rs {
		ops[r] = lr.launchOps(b, k, 2)
		for i := range ops[r] {
			ops[r][i].Send, ops[r][i].Recv = ops[r][0].Send, ops[r][0].Recv
		}
	}
	var launched [2]int64
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r := i & 1
		if err := rs[r].e.Launch(ops[r]); err != nil {
			b.Fatal(err)
		}
		launched[r] += int64(k)
		i++
	}
	b.StopTimer()
	for r, lr := range rs {
		require.NoError(b, lr.d.Synchronize(lr.s), "rank %d", r)
		require.Equal(b, launched[r], lr.launches.Load(), "rank %d kernel launches", r)
		require.NoError(b, lr.e.AsyncError())
	}
}

// BenchmarkGPULaunch is the host cost of one eager launch on the GPU
// backend over the fake driver: an AllReduce of 2 float32, and a group of
// 4. driver=fake includes the fake's own launch (argument copy, stream
// queue); driver=direct checks the launch in the call, leaving gccl's path.
func BenchmarkGPULaunch(b *testing.B) {
	for _, direct := range []bool{false, true} {
		drv := map[bool]string{false: "fake", true: "direct"}[direct]
		for _, k := range []int{1, 4} {
			b.Run(fmt.Sprintf("driver=%s/allreduce=%d", drv, k), func(b *testing.B) { benchLaunch(b, k, direct) })
		}
	}
}

// TestGPULaunchArgs runs the launch path of the benchmark with random
// counts and buffers: every kernel gets the op's buffers and count.
func TestGPULaunchArgs(t *testing.T) {
	rs := launchWorld(t, 2, false)
	rng := rand.New(rand.NewPCG(8, 9))
	var launched [2]int64
	for range 50 {
		for r, lr := range rs {
			count := 1 + rng.IntN(1000)
			ops := lr.launchOps(t, 1, count)
			require.NoError(t, lr.e.Launch(ops))
			launched[r]++
			require.NoError(t, lr.d.Synchronize(lr.s)) // want changes next round
		}
	}
	for r, lr := range rs {
		assert.Equal(t, launched[r], lr.launches.Load(), "rank %d", r)
		assert.NoError(t, lr.e.AsyncError())
	}
	// A wrong count must fail the stand-in (so the check can fail).
	ops := rs[0].launchOps(t, 1, 3)
	rs[0].want.count.Store(4)
	rs[0].poisoned = true
	require.NoError(t, rs[0].e.Launch(ops))
	require.Error(t, rs[0].d.Synchronize(rs[0].s))
}

// TestLaunchAfterKernelFailure: once a kernel reported a failure in the
// status word, the next launch fails with it and enqueues nothing.
func TestLaunchAfterKernelFailure(t *testing.T) {
	rs := launchWorld(t, 2, true)
	lr := rs[0]
	ops := lr.launchOps(t, 1, 2)
	require.NoError(t, lr.e.Launch(ops))
	require.EqualValues(t, 1, lr.launches.Load())
	atomic.StoreUint32(lr.g.ctl.StatusWord(), kernels.StatusTimeout)
	lr.poisoned = true
	require.ErrorIs(t, lr.e.Launch(ops), gccl.ErrTimeout)
	assert.EqualValues(t, 1, lr.launches.Load(), "nothing enqueued after the failure")
	require.ErrorIs(t, lr.e.AsyncError(), gccl.ErrTimeout)
}
