package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBuffersOutsideAllocations: on the host device every op kind's
// buffers are checked at launch against the live allocations, including
// root-only buffers (only on the root) and each member of a launch; a
// refused launch reaches no backend and the engine stays usable.
func TestBuffersOutsideAllocations(t *testing.T) {
	f := &fakeBackend{rng: rand.New(rand.NewPCG(11, 12))}
	e, buf := seamEngine(t, f, 10*time.Second) // buf: 4096 bytes, rank 0 of 1
	d, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	gone, err := d.Alloc(4096)
	require.NoError(t, err)
	require.NoError(t, d.Free(gone))
	mk := func(k algo.Kind, send, recv uintptr, count, root int) engine.Op {
		return engine.Op{Kind: k, Send: send, Recv: recv, Count: count, Type: gccl.Int32, Op: gccl.Sum, Root: root, Stream: 1}
	}
	cases := []struct {
		name  string
		op    engine.Op
		arg   string
		words string
	}{
		{"in place past the end", mk(algo.AllReduce, buf, buf, 2048, 0), "recvbuff",
			fmt.Sprintf("AllReduce of 2048 int32: recvbuff [%#x,+8192) runs 4096 bytes past its allocation of 4096 bytes at %#x", buf, buf)},
		{"recv past the end", mk(algo.AllReduce, buf, buf+2400, 600, 0), "recvbuff", "runs 704 bytes past"},
		{"never allocated", mk(algo.Broadcast, 0x10000, buf, 4, 0), "sendbuff", "not inside any allocation"},
		{"freed", mk(algo.Reduce, buf, gone, 4, 0), "recvbuff", "that was freed"},
		{"allgather in place", mk(algo.AllGather, buf, buf, 1100, 0), "recvbuff", "AllGather of 1100 int32: recvbuff"},
		{"send", mk(algo.P2PSend, buf+4000, 0, 100, 0), "sendbuff", "Send of 100 int32 to rank 0: sendbuff"},
		{"recv", mk(algo.P2PRecv, 0, gone, 1, 0), "recvbuff", "Recv of 1 int32 from rank 0: recvbuff"},
	}
	for _, c := range cases {
		c.op.Peer = 0
		err := e.Launch([]engine.Op{mk(algo.AllReduce, buf, buf, 4, 0), c.op})
		var ge *gccl.Error
		require.ErrorAs(t, err, &ge, c.name)
		assert.Equal(t, gccl.InvalidArgument, ge.Code, "%s: %v", c.name, err)
		assert.Equal(t, c.arg, ge.Arg, "%s: %v", c.name, err)
		assert.Contains(t, err.Error(), c.words, c.name)
	}
	assert.Empty(t, f.log(), "no refused launch reached the backend")
	require.NoError(t, e.AsyncError(), "refusals are not async errors")
	require.NoError(t, e.Launch([]engine.Op{mk(algo.AllReduce, buf, buf, 1024, 0)}), "the engine stays usable")
	require.NoError(t, e.Drain(t.Context()))
	assert.Equal(t, []int{1024}, f.log())
}

// TestRootOnlyBuffers: Broadcast's sendbuff and Reduce's recvbuff are
// checked on the root only, as NCCL reads them there only.
func TestRootOnlyBuffers(t *testing.T) {
	f := &fakeBackend{rng: rand.New(rand.NewPCG(13, 14))}
	d, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	buf, err := d.Alloc(4096)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Free(buf) })
	e, err := engine.New(engine.Config{Rank: 1, NRanks: 2, Boot: enginetest.NewNet(2).Rank(1), Device: d, Timeout: 10 * time.Second,
		Backend: func(context.Context, engine.Setup) (engine.Backend, error) { return f, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	const junk = 0x10000 // never mapped
	ok := []engine.Op{
		{Kind: algo.Broadcast, Send: junk, Recv: buf, Count: 1024, Type: gccl.Int32, Root: 0, Stream: 1},
		{Kind: algo.Reduce, Send: buf, Recv: junk, Count: 1024, Type: gccl.Int32, Root: 0, Stream: 1},
	}
	require.NoError(t, e.Launch(ok), "not the root: the root-only buffer is not used")
	for _, o := range ok {
		o.Root = 1
		err := e.Launch([]engine.Op{o})
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "the root's buffer is checked")
		assert.Contains(t, err.Error(), "not inside any allocation")
	}
	require.NoError(t, e.Drain(t.Context()))
	assert.Equal(t, []int{1024, 1024}, f.log())
}

// TestCheckPointersOff: GCCL_CHECK_POINTERS=0 turns the check off (the
// launch reaches the backend, which here touches no memory).
func TestCheckPointersOff(t *testing.T) {
	t.Setenv("GCCL_CHECK_POINTERS", "0")
	env.Reload()
	t.Cleanup(func() { env.Reload() })
	f := &fakeBackend{rng: rand.New(rand.NewPCG(15, 16))}
	e, buf := seamEngine(t, f, 10*time.Second)
	require.NoError(t, e.Launch([]engine.Op{{Kind: algo.AllReduce, Send: buf, Recv: buf, Count: 4096, Type: gccl.Int32, Stream: 1}}))
	require.NoError(t, e.Drain(t.Context()))
	assert.Equal(t, []int{4096}, f.log())
}

// gpuEngine is a one-rank engine on f over GPU 0 of a fake driver.
func gpuEngine(t *testing.T, f engine.Backend) (*engine.Engine, *device.CUDADevice) {
	t.Helper()
	dv, err := devlink.OpenGPU(cudafake.New(cudafake.Config{}), 0, 10*time.Second)
	require.NoError(t, err)
	d := dv.(*device.CUDADevice)
	t.Cleanup(func() { _ = d.Close() })
	e, err := engine.New(engine.Config{Rank: 0, NRanks: 1, Boot: enginetest.NewNet(1).Rank(0), Device: d, Timeout: 10 * time.Second,
		Backend: func(context.Context, engine.Setup) (engine.Backend, error) { return f, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e, d
}

// TestGPUCheckPointers: on a GPU the check follows GCCL_CHECK_POINTERS
// (default engine.DefaultGPUCheckPointers) and asks the driver: Alloc and
// bufreg.MemAlloc (cuMem) buffers pass, overruns and unknown pointers are
// refused, a buffer freed by bufreg.MemFree is refused.
func TestGPUCheckPointers(t *testing.T) {
	for _, set := range []string{"", "1"} {
		t.Run("GCCL_CHECK_POINTERS="+set, func(t *testing.T) {
			t.Setenv("GCCL_CHECK_POINTERS", set)
			env.Reload()
			t.Cleanup(func() { env.Reload() })
			on := set == "1" || engine.DefaultGPUCheckPointers
			f := &fakeBackend{rng: rand.New(rand.NewPCG(17, 18))}
			e, d := gpuEngine(t, f)
			p, err := d.Alloc(4096)
			require.NoError(t, err)
			reg, err := memalloc.Alloc(d, 4096)
			require.NoError(t, err)
			size, _ := memalloc.Size(reg)
			ar := func(send, recv uintptr, count int) []engine.Op {
				return []engine.Op{{Kind: algo.AllReduce, Send: send, Recv: recv, Count: count, Type: gccl.Int8, Stream: 1}}
			}
			require.NoError(t, e.Launch(ar(p, p, 4096)))
			require.NoError(t, e.Launch(ar(reg, reg, size)), "bufreg.MemAlloc memory")
			bad := [][]engine.Op{ar(p, p, 8192), ar(0xdead0000, p, 16), ar(reg, reg, size+1)}
			for _, ops := range bad {
				err := e.Launch(ops)
				if on {
					require.ErrorIs(t, err, gccl.ErrInvalidArgument)
				} else {
					require.NoError(t, err, "the check is off")
				}
			}
			require.NoError(t, memalloc.Free(reg))
			err = e.Launch(ar(reg, reg, 16))
			if on {
				require.ErrorIs(t, err, gccl.ErrInvalidArgument, "freed by MemFree")
				assert.Contains(t, err.Error(), "not inside any allocation of GPU 0")
			}
			require.NoError(t, e.Drain(t.Context()))
		})
	}
}

// TestCheckPointersDefaultDocumented: the default that env.Vars (and so
// the README) states for GCCL_CHECK_POINTERS is DefaultGPUCheckPointers.
func TestCheckPointersDefaultDocumented(t *testing.T) {
	want := "host 1, GPU 0"
	if engine.DefaultGPUCheckPointers {
		want = "host 1, GPU 1"
	}
	for _, v := range env.Vars {
		if v.Name == "GCCL_CHECK_POINTERS" {
			assert.Equal(t, want, v.Default, "update internal/env's Vars and the README's row with the constant")
			return
		}
	}
	t.Fatal("env.Vars has no GCCL_CHECK_POINTERS")
}
