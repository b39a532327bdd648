package viahost

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/internal/engine/host"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGPUWorld is n engines on fake GPUs (one fake machine per rank, so
// each has its own current context) on the GPU-via-host backend.
func fakeGPUWorld(t *testing.T, n int) ([]*engine.Engine, []*device.CUDADevice, []gccl.Stream) {
	t.Helper()
	devs, streams, _ := fakeGPUs(t, n)
	return viaHostComm(t, devs, 0), devs, streams
}

// fakeGPUs are n fake GPUs (one fake machine each) with a stream each,
// closed after the test.
func fakeGPUs(t *testing.T, n int) ([]*device.CUDADevice, []gccl.Stream, []*cudafake.Fake) {
	t.Helper()
	devs, streams, fakes := make([]*device.CUDADevice, n), make([]gccl.Stream, n), make([]*cudafake.Fake, n)
	for r := range n {
		fakes[r] = cudafake.New(cudafake.Config{})
		dv, err := devlink.OpenGPU(fakes[r], 0, 10*time.Second)
		require.NoError(t, err)
		devs[r] = dv.(*device.CUDADevice)
		t.Cleanup(func() { assert.NoError(t, devs[r].Close()) })
		streams[r], err = devs[r].NewStream()
		require.NoError(t, err)
	}
	return devs, streams, fakes
}

// viaHostComm is a communicator over devs on the GPU-via-host backend,
// its engines' ID id, closed after the test.
func viaHostComm(t *testing.T, devs []*device.CUDADevice, id uint64) []*engine.Engine {
	t.Helper()
	n := len(devs)
	net, tc := enginetest.NewNet(n), enginetest.Identity()
	engines, errs := make([]*engine.Engine, n), make([]error, n)
	var wg sync.WaitGroup
	for r, d := range devs {
		wg.Go(func() {
			engines[r], errs[r] = engine.New(engine.Config{Rank: r, NRanks: n, Boot: net.Rank(r), Device: d, ID: id, Timeout: 10 * time.Second,
				Backend: New(host.Config{Transport: tc, Algos: algo.AllAlgorithms})})
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, e := range engines {
			assert.NoError(t, e.Close())
		}
	})
	return engines
}

func devBuf(t *testing.T, d *device.CUDADevice, content []byte) uintptr {
	p, err := d.Alloc(len(content))
	require.NoError(t, err)
	require.NoError(t, d.CopyIn(p, content))
	return p
}

// TestViaHost: an all-reduce, a broadcast and a ring of sends in one
// launch per rank, on fake device memory, through pinned host memory and
// the host backend.
func TestViaHost(t *testing.T) {
	const n, count = 3, 1001
	engines, devs, streams := fakeGPUWorld(t, n)
	rng := rand.New(rand.NewPCG(5, 6))
	in := make([][]byte, n)
	sum := make([]int32, count)
	for r := range in {
		in[r] = make([]byte, 4*count)
		for i := range count {
			v := int32(rng.Uint32() >> 4)
			binary.LittleEndian.PutUint32(in[r][4*i:], uint32(v))
			sum[i] += v
		}
	}
	want := make([]byte, 4*count)
	for i, v := range sum {
		binary.LittleEndian.PutUint32(want[4*i:], uint32(v))
	}
	for iter := range 3 { // later launches reuse the pinned blocks
		viaHostRound(t, engines, devs, streams, in, want, iter)
	}
}

// viaHostRound launches an all-reduce, a broadcast (root iter) and a ring
// exchange on every rank and checks every rank's outputs.
func viaHostRound(t *testing.T, engines []*engine.Engine, devs []*device.CUDADevice, streams []gccl.Stream, in [][]byte, want []byte, root int) {
	n, count := len(engines), len(want)/4
	poison := bytes.Repeat([]byte{0xA5}, 4*count)
	ar, bc, rv := make([]uintptr, n), make([]uintptr, n), make([]uintptr, n)
	for r, e := range engines {
		send := devBuf(t, devs[r], in[r])
		ar[r], bc[r], rv[r] = devBuf(t, devs[r], poison), devBuf(t, devs[r], poison), devBuf(t, devs[r], poison)
		s := streams[r]
		ops := []engine.Op{
			{Kind: algo.AllReduce, Send: send, Recv: ar[r], Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: s},
			{Kind: algo.Broadcast, Send: send, Recv: bc[r], Count: count, Type: gccl.Int32, Root: root, Stream: s},
			{Kind: algo.P2PSend, Send: send, Count: count, Type: gccl.Int32, Peer: (r + 1) % n, Stream: s},
			{Kind: algo.P2PRecv, Recv: rv[r], Count: count, Type: gccl.Int32, Peer: (r + n - 1) % n, Stream: s},
		}
		require.NoError(t, e.Launch(ops))
	}
	for r := range engines {
		require.NoError(t, devs[r].Synchronize(streams[r]))
		got := make([]byte, 4*count)
		require.NoError(t, devs[r].CopyOut(got, ar[r]))
		assert.Equal(t, want, got, "rank %d all-reduce", r)
		require.NoError(t, devs[r].CopyOut(got, bc[r]))
		assert.Equal(t, in[root], got, "rank %d broadcast", r)
		require.NoError(t, devs[r].CopyOut(got, rv[r]))
		assert.Equal(t, in[(r+n-1)%n], got, "rank %d receive", r)
		assert.NoError(t, engines[r].AsyncError())
	}
}
