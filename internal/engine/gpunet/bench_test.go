package gpunet

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/internal/engine/host"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport"
	"github.com/stretchr/testify/require"
)

// benchSizes are the buffer sizes of BenchmarkAllReduceHosts: 1 KiB, the
// issue's yardstick (the gather kernel, one hop), and 16 KiB.
var benchSizes = []int{1 << 10, 16 << 10}

// BenchmarkAllReduceHosts: a float32 Sum AllReduce of 2 ranks on 2
// simulated hosts over the socket provider on loopback, one operation at
// a time (each rank launches, then synchronizes its stream, as gccl-perf
// does), through the whole backend: backend=gpunet is this package on
// cudafake with the Go twins of the ring kernels (their waits polling
// without sleeping, as a GPU's do), so it times everything but the GPU:
// the engine's launch path, Submit, the proxy's kick and passes, the
// provider; backend=host is the host backend's same operation over the
// same link, the yardstick. Reported: µs per operation (the
// benchmark's mean), and the median and 90th percentile of the per-op
// times rank 0 saw (what a loaded machine's outliers move less).
func BenchmarkAllReduceHosts(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("backend=gpunet/bytes=%d", size), func(b *testing.B) {
			twinSpin.Store(true)
			defer twinSpin.Store(false)
			w := newWorld(b, 2, 0, 0, 20*time.Second)
			devs := make([]device.Device, len(w.devs))
			for r, d := range w.devs {
				devs[r] = d
			}
			benchAllReduce(b, benchRanks{engines: w.engines, devs: devs, streams: w.streams}, size, func() string { return w.backs[0].LastPath() })
		})
		b.Run(fmt.Sprintf("backend=host/bytes=%d", size), func(b *testing.B) {
			benchAllReduce(b, hostRanks(b, 2), size, nil)
		})
	}
}

// benchRanks are the ranks a benchmark drives: an engine, its device and
// a stream each.
type benchRanks struct {
	engines []*engine.Engine
	devs    []device.Device
	streams []gccl.Stream
}

// hostRanks opens n ranks on the host backend, each on a host of its own
// (the socket provider on loopback, no shared memory), closed after b.
func hostRanks(b *testing.B, n int) benchRanks {
	var id, secret [16]byte
	_, _ = rand.Read(id[:])
	_, _ = rand.Read(secret[:])
	net := enginetest.NewNet(n)
	rs := benchRanks{engines: make([]*engine.Engine, n), devs: make([]device.Device, n), streams: make([]gccl.Stream, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		d, err := device.Open(device.Host, 0)
		require.NoError(b, err)
		rs.devs[r] = d
		rs.streams[r], err = d.NewStream()
		require.NoError(b, err)
		cfg := host.Config{Transport: transport.Config{CommID: id, Secret: secret, NetName: "socket", IfName: "lo", ShmDisable: true, HostHash: uint64(r) + 1},
			Algos: env.Get().Algos}
		wg.Go(func() {
			rs.engines[r], errs[r] = engine.New(engine.Config{Rank: r, NRanks: n, Boot: net.Rank(r), Device: d, Timeout: 20 * time.Second,
				Backend: func(ctx context.Context, s engine.Setup) (engine.Backend, error) {
					hb, err := host.Open(ctx, s, cfg)
					if err != nil {
						return nil, err
					}
					return hb, nil
				}})
		})
	}
	wg.Wait()
	b.Cleanup(func() {
		for r, e := range rs.engines {
			if e != nil {
				require.NoError(b, e.Close(), "rank %d", r)
			}
		}
	})
	for _, err := range errs {
		require.NoError(b, err)
	}
	return rs
}

// spinSync waits for s's work polling without sleeping, yielding the P
// between polls, as gccl-perf waits for its timing events (a sleeping
// wait would time the sleeps).
func spinSync(d device.Device, s gccl.Stream) error {
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		done, err := d.Query(s)
		if done || err != nil {
			return err
		}
		if i%1024 == 1023 && time.Now().After(deadline) {
			return fmt.Errorf("stream %#x not done after 20s", uintptr(s))
		}
		runtime.Gosched()
	}
}

// benchAllReduce times b.N all-reduces of size bytes on rs, each rank on a
// goroutine of its own launching one and waiting for it (spinSync) at a time; after
// the warm-up it checks one result (every element) and, with path, that
// the GPU path ran the gather kernel where the cost model says so.
func benchAllReduce(b *testing.B, rs benchRanks, size int, path func() string) {
	n, count := len(rs.engines), size/4
	rng := mrand.New(mrand.NewPCG(uint64(size), 7))
	ins := make([][]byte, n)
	ops := make([][]engine.Op, n)
	outs := make([]uintptr, n)
	for r := range n {
		ins[r] = make([]byte, size)
		reduce.Fill(ins[r], gccl.Float32, rng)
		in, err := rs.devs[r].Alloc(size)
		require.NoError(b, err)
		require.NoError(b, rs.devs[r].CopyIn(in, ins[r]))
		outs[r], err = rs.devs[r].Alloc(size)
		require.NoError(b, err)
		b.Cleanup(func() { _ = rs.devs[r].Free(in); _ = rs.devs[r].Free(outs[r]) })
		ops[r] = []engine.Op{{Kind: algo.AllReduce, Send: in, Recv: outs[r], Count: count, Type: gccl.Float32, Op: gccl.Sum, Stream: rs.streams[r]}}
	}
	var times []time.Duration // rank 0's per-op times
	run := func(iters int) {
		times = slices.Grow(times[:0], iters)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for r := range n {
			wg.Go(func() {
				last := time.Now()
				for range iters {
					if errs[r] = rs.engines[r].Launch(ops[r]); errs[r] != nil {
						return
					}
					if errs[r] = spinSync(rs.devs[r], rs.streams[r]); errs[r] != nil {
						return
					}
					if r == 0 {
						now := time.Now()
						times = append(times, now.Sub(last))
						last = now
					}
				}
			})
		}
		wg.Wait()
		for r, err := range errs {
			require.NoError(b, err, "rank %d", r)
			require.NoError(b, rs.engines[r].AsyncError(), "rank %d", r)
		}
	}
	run(50) // connect, warm up
	want := append([]byte(nil), ins[0]...)
	for r := 1; r < n; r++ {
		require.NoError(b, reduce.Into3(want, want, ins[r], gccl.Float32, gccl.Sum))
	}
	for r := range n {
		got := make([]byte, size)
		require.NoError(b, rs.devs[r].CopyOut(got, outs[r]))
		require.Equal(b, want, got, "rank %d", r) // same order of additions on every backend: bit-identical
	}
	if path != nil && size <= 1<<10 {
		require.Equal(b, kernels.RingAllReduceGather, path())
	}
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/op")
	slices.Sort(times)
	q := func(f float64) float64 {
		return float64(times[min(len(times)-1, int(f*float64(len(times))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(q(0.5), "p50-µs/op")
	b.ReportMetric(q(0.9), "p90-µs/op")
}

// launchOnly is the fake GPU with kernel launches counted and dropped, so
// that BenchmarkLaunch times gccl's own host path and not the fake's
// stream or the twins.
type launchOnly struct {
	*cudafake.Fake
	launches *int
}

func (d launchOnly) LaunchKernel(fn cuda.Function, grid, block cuda.Dim3, _ int, _ cuda.Stream, a *cuda.Args) error {
	if fn == 0 || grid.X != 1 || a.Err() != nil {
		return fmt.Errorf("launchOnly: function %v grid %v args %v", fn, grid, a.Err())
	}
	*d.launches++
	return nil
}

// launchOnlyAllReduce sets up rank 0 of 2 simulated hosts with its
// kernels dropped (launchOnly, restored at cleanup) and a 1 KiB float32
// all-reduce in place: the world, rank 0's backend, the ops and the count
// of kernel launches.
func launchOnlyAllReduce(tb testing.TB) (*world, *Backend, []engine.Op, *int) {
	w := newWorld(tb, 2, 0, 0, 20*time.Second)
	g := w.backs[0]
	launches := new(int)
	drv := g.drv
	g.drv = launchOnly{Fake: w.fakes[0], launches: launches}
	tb.Cleanup(func() { g.drv = drv })
	in, err := w.devs[0].Alloc(1 << 10)
	require.NoError(tb, err)
	ops := []engine.Op{{Kind: algo.AllReduce, Send: in, Recv: in, Count: 256, Type: gccl.Float32, Op: gccl.Sum, Stream: w.streams[0]}}
	return w, g, ops, launches
}

// TestLaunchAllocatesNothing: in steady state the host path of a small
// all-reduce's launch (launchOnly: the kernel dropped) allocates nothing.
func TestLaunchAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	w, g, ops, launches := launchOnlyAllReduce(t)
	launch := func() { require.NoError(t, w.engines[0].Launch(ops)) }
	for range 10 {
		launch()
	}
	require.Zero(t, testing.AllocsPerRun(100, launch))
	require.Equal(t, kernels.RingAllReduceGather, g.LastPath())
	require.Equal(t, 10+1+100, *launches) // AllocsPerRun runs launch once more first
}

// BenchmarkLaunch: the host path of one small all-reduce's launch on the
// backend, rank 0 of 2 simulated hosts (engine.Launch: the turn, Submit,
// the ring kernel's launch, the proxy's kick), the kernels dropped
// (launchOnly). ns/op and allocs/op are the launch's (the proxy, kicked,
// polls on another goroutine meanwhile).
func BenchmarkLaunch(b *testing.B) {
	w, g, ops, launches := launchOnlyAllReduce(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.engines[0].Launch(ops); err != nil {
			b.Fatal(err)
		}
	}
	require.Equal(b, kernels.RingAllReduceGather, g.LastPath())
	require.Positive(b, *launches)
}
