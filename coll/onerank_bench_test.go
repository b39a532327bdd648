package coll_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// directGPU is the fake GPU with the two calls that end an eager one-rank
// collective, a kernel launch and a device-to-device copy, counted in the
// call and not run (no argument copy, no stream goroutine), so that a
// benchmark on it times gccl's own host path from the public call to the
// driver.
type directGPU struct {
	*cudafake.Fake
	kernels, copies atomic.Int64
}

// ModuleGetFunction finds any kernel: LaunchKernel never runs it.
func (d *directGPU) ModuleGetFunction(m cuda.Module, name string) (cuda.Function, error) {
	d.RegisterKernel(name, func(*cudafake.Fake, cuda.Dim3, cuda.Dim3, *cuda.Args) error { return nil })
	return d.Fake.ModuleGetFunction(m, name)
}

func (d *directGPU) LaunchKernel(fn cuda.Function, grid, block cuda.Dim3, _ int, _ cuda.Stream, a *cuda.Args) error {
	if fn == 0 || grid.X == 0 || block.X == 0 || a.Err() != nil {
		return fmt.Errorf("directGPU: bad launch of %#x grid %v block %v: %v", fn, grid, block, a.Err())
	}
	d.kernels.Add(1)
	return nil
}

func (d *directGPU) MemcpyDtoDAsync(dst, src uintptr, n int, _ cuda.Stream) error {
	if dst == 0 || src == 0 || n <= 0 {
		return fmt.Errorf("directGPU: bad copy of %d bytes %#x -> %#x", n, src, dst)
	}
	d.copies.Add(1)
	return nil
}

// oneRank is a one-rank communicator on the GPU backend over drv, with
// its stream and two buffers of bytes bytes.
type oneRank struct {
	c          *comm.Comm
	s          gccl.Stream
	send, recv uintptr
}

func newOneRank(tb testing.TB, bytes int) (*oneRank, *directGPU) {
	tb.Helper()
	drv := &directGPU{Fake: cudafake.New(cudafake.Config{MemBytes: 256 << 20})}
	tb.Cleanup(devlink.SetLoader(func() (cuda.Driver, error) { return drv, nil }))
	id, err := comm.NewUniqueID()
	require.NoError(tb, err)
	blocking := true
	c, err := comm.InitRankConfig(1, id, 0, &comm.Config{Backend: device.CUDA, Timeout: 10 * time.Second, Blocking: &blocking})
	require.NoError(tb, err)
	tb.Cleanup(func() { assert.NoError(tb, c.Close()) })
	r := &oneRank{c: c}
	d := c.Device()
	r.s, err = d.NewStream()
	require.NoError(tb, err)
	r.send, err = d.Alloc(bytes)
	require.NoError(tb, err)
	r.recv, err = d.Alloc(bytes)
	require.NoError(tb, err)
	return r, drv
}

// oneRankCall is one collective of count float32 through the public API;
// in place when recv is send.
type oneRankCall struct {
	name string
	call func(c *comm.Comm, send, recv uintptr, count int, s gccl.Stream) error
}

var oneRankCalls = []oneRankCall{
	{"allreduce", func(c *comm.Comm, send, recv uintptr, n int, s gccl.Stream) error {
		return coll.AllReduce(c, send, recv, n, gccl.Float32, gccl.Sum, s)
	}},
	{"allgather", func(c *comm.Comm, send, recv uintptr, n int, s gccl.Stream) error {
		return coll.AllGather(c, send, recv, n, gccl.Float32, s)
	}},
	{"reducescatter", func(c *comm.Comm, send, recv uintptr, n int, s gccl.Stream) error {
		return coll.ReduceScatter(c, send, recv, n, gccl.Float32, gccl.Sum, s)
	}},
	{"broadcast", func(c *comm.Comm, send, recv uintptr, n int, s gccl.Stream) error {
		return coll.Broadcast(c, send, recv, n, gccl.Float32, 0, s)
	}},
	{"reduce", func(c *comm.Comm, send, recv uintptr, n int, s gccl.Stream) error {
		return coll.Reduce(c, send, recv, n, gccl.Float32, gccl.Sum, 0, s)
	}},
}

// oneRankBytes are the sizes the one-rank benchmark covers: below
// gpuplan.SingleCopyMin (a copy kernel) and above it (a copy).
var oneRankBytes = []int{64 << 10, 4 << 20}

// BenchmarkOneRankEager is the host cost of one eager collective of a
// one-rank communicator on the GPU backend, from the public coll call to
// the driver call that ends it (directGPU counts it and returns): each
// collective, in place (no device work at all) and out of place (a copy
// kernel below 1 MiB, a copy from there), float32.
func BenchmarkOneRankEager(b *testing.B) {
	for _, bytes := range oneRankBytes {
		r, drv := newOneRank(b, bytes)
		for _, oc := range oneRankCalls {
			for _, inPlace := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/bytes=%d/inplace=%v", oc.name, bytes, inPlace), func(b *testing.B) {
					recv := r.recv
					if inPlace {
						recv = r.send
					}
					k0, c0 := drv.kernels.Load(), drv.copies.Load()
					runtime.GC() // the fake's 256 MiB from setup: not in the first case's time
					b.ReportAllocs()
					for b.Loop() {
						if err := oc.call(r.c, r.send, recv, bytes/4, r.s); err != nil {
							b.Fatal(err)
						}
					}
					kernels, copies := drv.kernels.Load()-k0, drv.copies.Load()-c0
					switch {
					case inPlace:
						require.Zero(b, kernels+copies, "an in-place one-rank collective does no device work")
					case bytes < gpuplan.SingleCopyMin:
						require.Equal(b, [2]int64{int64(b.N), 0}, [2]int64{kernels, copies}, "one copy kernel per operation")
					default:
						require.Equal(b, [2]int64{0, int64(b.N)}, [2]int64{kernels, copies}, "one copy per operation")
					}
				})
			}
		}
	}
}
