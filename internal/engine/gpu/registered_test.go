package gpu

import (
	"context"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/gccl/gccl/internal/regcache"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/peermem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// regRank is one rank of a zero-copy test world: an engine on its own fake
// GPU whose kernels are Go stand-ins, its backend, and the registration
// cache it registers with (the communicator's, handed to the backend).
type regRank struct {
	e    *engine.Engine
	g    *Backend
	f    *cudafake.Fake
	drv  *countingDriver // the driver the device and engine use
	d    *device.CUDADevice
	s    gccl.Stream
	boot *enginetest.Boot
	regs *regcache.Cache
	rank int
	n    int
}

// use is a constructor that returns b, for engine.Config.
func use(b engine.Backend) engine.NewBackend {
	return func(context.Context, engine.Setup) (engine.Backend, error) { return b, nil }
}

// testSetup is rank r's engine.Setup in a test world of n ranks.
func testSetup(r, n int, boot engine.Bootstrap, d device.Device) engine.Setup {
	return engine.Setup{Rank: r, NRanks: n, Boot: boot, Device: d, Timeout: 10 * time.Second, Log: slog.Default()}
}

// regWorld builds n GPU-backend engines on fake GPUs without the fatbin:
// the backend is made by hand with stand-in kernels (no cross-rank
// barriers: every test writes its inputs before any rank launches). Each
// rank's registrations go through its regRank (graph registration on).
func regWorld(t *testing.T, n int) []*regRank {
	net := enginetest.NewNet(n)
	rs := make([]*regRank, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		f := cudafake.New(cudafake.Config{MemBytes: 512 << 20})
		standIns(f)
		drv := &countingDriver{Fake: f}
		d := openGPU(t, drv)
		s, err := d.NewStream()
		require.NoError(t, err)
		boot := net.Rank(r)
		regs := regcache.New(regcache.Owner{Device: d, Rank: r, NRanks: n, Net: boot})
		rs[r] = &regRank{f: f, drv: drv, d: d, s: s, boot: boot, regs: regs, rank: r, n: n}
		g := newBackendState(d, testSetup(r, n, boot, d), Config{Regs: regs})
		require.NoError(t, d.Do(func() error { return g.allocate([]byte("stand-in kernels")) }))
		// The stand-ins never touch the peers' areas: each rank maps its own.
		g.peers = &peermem.Mapping{Ptrs: slices.Repeat([]uintptr{g.buf}, n)}
		g.setBase()
		rs[r].g = g
		wg.Go(func() {
			rs[r].e, errs[r] = engine.New(engine.Config{Rank: r, NRanks: n, Boot: rs[r].boot, Device: d, Timeout: 10 * time.Second, Backend: use(g)})
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for _, r := range rs {
			assert.NoError(t, r.e.Close())
			assert.NoError(t, r.regs.Close()) // the communicator's part
			assert.NoError(t, r.d.Close())
		}
	})
	return rs
}

// countingDriver is the fake driver counting the calls that holding
// registrations makes; failQuery makes cuEventQuery fail, failIPC
// cuIpcGetMemHandle of that one address.
type countingDriver struct {
	*cudafake.Fake
	hostFuncs, eventsMade, timedEvents atomic.Int64
	launches                           atomic.Int64
	failQuery                          atomic.Bool
	failIPC                            atomic.Uintptr
	failLaunch                         atomic.Pointer[error] // the next cuLaunchKernel's error, once
}

func (c *countingDriver) LaunchKernel(fn cuda.Function, grid, block cuda.Dim3, shmem int, s cuda.Stream, a *cuda.Args) error {
	if p := c.failLaunch.Swap(nil); p != nil {
		return *p
	}
	c.launches.Add(1)
	return c.Fake.LaunchKernel(fn, grid, block, shmem, s, a)
}

func (c *countingDriver) IpcGetMemHandle(p uintptr) (cuda.IpcMemHandle, error) {
	if p != 0 && p == c.failIPC.Load() {
		return cuda.IpcMemHandle{}, cuda.NewError("cuIpcGetMemHandle", cuda.ErrorInvalidValue, "(test)")
	}
	return c.Fake.IpcGetMemHandle(p)
}

func (c *countingDriver) LaunchHostFunc(s cuda.Stream, fn func()) error {
	c.hostFuncs.Add(1)
	return c.Fake.LaunchHostFunc(s, fn)
}

func (c *countingDriver) EventCreate(flags uint32) (cuda.Event, error) {
	c.eventsMade.Add(1)
	if flags&cuda.EventDisableTiming == 0 {
		c.timedEvents.Add(1)
	}
	return c.Fake.EventCreate(flags)
}

func (c *countingDriver) EventQuery(e cuda.Event) (bool, error) {
	if c.failQuery.Load() {
		return false, cuda.NewError("cuEventQuery", cuda.ErrorIllegalAddress, "(test)")
	}
	return c.Fake.EventQuery(e)
}

func mem(f *cudafake.Fake, p uintptr, n int) []byte {
	b, err := f.Bytes(p, n)
	if err != nil {
		panic(err)
	}
	return b
}

// standIns registers Go versions of the zero-copy kernels (int32 sums).
func standIns(f *cudafake.Fake) {
	sum := func(f *cudafake.Fake, c kernels.DevComm, src []uintptr, at, count int, dst []uintptr) {
		for i := range count {
			var v int32
			for _, p := range src {
				v += int32(binary.LittleEndian.Uint32(mem(f, p+uintptr(4*(at+i)), 4)))
			}
			for _, p := range dst {
				binary.LittleEndian.PutUint32(mem(f, p+uintptr(4*i), 4), uint32(v))
			}
		}
	}
	f.RegisterKernel("gccl_allreduce_twoshot_i32_sum", func(f *cudafake.Fake, _, _ cuda.Dim3, a *cuda.Args) error {
		c, count := decodeWholeComm(a.Arg(0)), int(a.Uint64(1))
		per := (count + int(c.NRanks) - 1) / int(c.NRanks)
		b, e := min(count, per*int(c.Rank)), min(count, per*int(c.Rank+1))
		dst := make([]uintptr, c.NRanks)
		for r := range dst {
			dst[r] = c.Out[r] + uintptr(4*b)
		}
		sum(f, c, c.In[:c.NRanks], b, e-b, dst)
		return nil
	})
	f.RegisterKernel("gccl_reducescatter_i32_sum", func(f *cudafake.Fake, _, _ cuda.Dim3, a *cuda.Args) error {
		c, count := decodeWholeComm(a.Arg(0)), int(a.Uint64(1))
		sum(f, c, c.In[:c.NRanks], int(c.Rank)*count, count, []uintptr{c.Out[c.Rank]})
		return nil
	})
	f.RegisterKernel(kernels.AllGather, func(f *cudafake.Fake, _, _ cuda.Dim3, a *cuda.Args) error {
		c, nb := decodeWholeComm(a.Arg(0)), int(a.Uint64(1))
		for r := range c.NRanks {
			copy(mem(f, c.Out[r]+uintptr(int(c.Rank)*nb), nb), mem(f, c.In[c.Rank], nb))
		}
		return nil
	})
	f.RegisterKernel(kernels.Broadcast, func(f *cudafake.Fake, _, _ cuda.Dim3, a *cuda.Args) error {
		c, nb := decodeWholeComm(a.Arg(0)), int(a.Uint64(1))
		for r := range c.NRanks {
			if r != c.Root {
				copy(mem(f, c.Out[r], nb), mem(f, c.In[c.Root], nb))
			}
		}
		return nil
	})
}

// register registers one buffer per rank collectively.
func register(t *testing.T, rs []*regRank, ptrs []uintptr, size int) []*regcache.Handle {
	hs, errs := make([]*regcache.Handle, len(rs)), make([]error, len(rs))
	var wg sync.WaitGroup
	for r, x := range rs {
		wg.Go(func() { hs[r], errs[r] = x.regs.Register(ptrs[r], size) })
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		require.Len(t, hs[r].Registration().Peers, len(rs))
	}
	return hs
}

func randInt32s(rng *rand.Rand, n int) ([]byte, []int32) {
	b, v := make([]byte, 4*n), make([]int32, n)
	for i := range v {
		v[i] = int32(rng.Uint32() >> 3)
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v[i]))
	}
	return b, v
}
