package perftest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/internal/regcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OpenGPU opens GPU ordinal 0 through drv (a cudafake), closed after the test.
func OpenGPU(t *testing.T, drv cuda.Driver) *device.CUDADevice {
	t.Helper()
	d, err := devlink.OpenGPU(drv, 0, 10*time.Second)
	require.NoError(t, err)
	gpu := d.(*device.CUDADevice)
	t.Cleanup(func() { assert.NoError(t, gpu.Close()) })
	return gpu
}

// GPU is a CUDA device on a fresh fake driver with one stream.
func GPU(t *testing.T) (*device.CUDADevice, gccl.Stream) {
	t.Helper()
	d := OpenGPU(t, cudafake.New(cudafake.Config{}))
	s, err := d.NewStream()
	require.NoError(t, err)
	return d, s
}

// Driver is the CUDA driver d calls.
func Driver(d *device.CUDADevice) cuda.Driver {
	drv, _ := devlink.Driver(d)
	return drv
}

// Lib is a stream library on the fake driver: an operation copies the
// send buffer to the receive buffer (the one-rank broadcast: Short copies
// the last element less, to make a wrong result; halo is the one-rank
// periodic exchange, each face into the opposite halo, or with Misplace
// into its own side's), then sleeps Delay in stream order, as a kernel of
// known length would run. It is also a registrar (arena.Registrar).
type Lib struct {
	name     string
	Dev      *device.CUDADevice
	Stream   gccl.Stream
	Delay    time.Duration
	Short    bool
	Misplace bool         // halo: face i lands in halo i, not the opposite side's
	Fail     error        // returned by Launch when set
	Launches atomic.Int64 // Launch calls
	Ran      atomic.Int64 // operations the stream executed

	mu   sync.Mutex
	regs map[uintptr]int // base -> size
}

// NewLib is a library called name on d's stream s.
func NewLib(name string, d *device.CUDADevice, s gccl.Stream, delay time.Duration) *Lib {
	return &Lib{name: name, Dev: d, Stream: s, Delay: delay, regs: map[uintptr]int{}}
}

func (f *Lib) Name() string { return f.name }
func (f *Lib) Supports(perf.Op, gccl.DataType, gccl.RedOp, bool) error {
	return nil
}
func (f *Lib) Close() error { return nil }

func (f *Lib) Launch(c lib.Call) error {
	f.Launches.Add(1)
	if f.Fail != nil {
		return f.Fail
	}
	n := c.Count * c.Type.Size()
	if f.Short && n > 0 {
		n -= c.Type.Size()
	}
	drv, s := Driver(f.Dev), cuda.Stream(f.Stream)
	if c.Op == perf.Halo {
		if err := f.halo(c); err != nil {
			return err
		}
	} else if n > 0 {
		if err := drv.MemcpyDtoDAsync(c.Recv, c.Send, n, s); err != nil {
			return err
		}
	}
	return drv.LaunchHostFunc(s, func() { time.Sleep(f.Delay); f.Ran.Add(1) })
}

// halo copies each face into the halo on the opposite side (a rank alone
// on a periodic grid is its own neighbour on every side), or into its own
// side's with Misplace.
func (f *Lib) halo(c lib.Call) error {
	hs := c.Halos()
	for i, h := range hs {
		from := hs[i^1]
		if f.Misplace {
			from = h
		}
		if err := Driver(f.Dev).MemcpyDtoDAsync(h.Recv, from.Send, h.Count*c.Type.Size(), cuda.Stream(f.Stream)); err != nil {
			return err
		}
	}
	return nil
}

func (f *Lib) Register(p uintptr, size int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.regs[p]; dup {
		return errors.New("registered twice")
	}
	f.regs[p] = size
	return nil
}

func (f *Lib) Deregister(p uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.regs[p]; !ok {
		return errors.New("not registered")
	}
	delete(f.regs, p)
	return nil
}

// Registered is how many registrations are live.
func (f *Lib) Registered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.regs)
}

// Call is a one-rank broadcast of count float32 elements between two
// fresh device buffers.
func Call(t *testing.T, d *device.CUDADevice, count int) lib.Call {
	send, err := d.Alloc(4 * count)
	require.NoError(t, err)
	recv, err := d.Alloc(4 * count)
	require.NoError(t, err)
	return lib.Call{Op: perf.Broadcast, Send: send, Recv: recv, Count: count, Type: gccl.Float32, NRanks: 1}
}

// OneRank is the registration cache of a one-rank communicator on d,
// closed after the test.
func OneRank(t *testing.T, d device.Device) *regcache.Cache {
	c := regcache.New(regcache.Owner{Device: d, NRanks: 1})
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// CacheRegister registers with c as gccl's registration of the sweep's
// memory does with a communicator's cache (arena.GcclRegister's shape).
func CacheRegister(c *regcache.Cache) func(p uintptr, size int) (func() error, error) {
	return func(p uintptr, size int) (func() error, error) {
		h, err := c.Register(p, size)
		if err != nil {
			return nil, err
		}
		return func() error { return regcache.Deregister(h) }, nil
	}
}

// Path is a path source (memview.PathSource) that always names one path.
type Path string

func (p Path) LastGPUPath() string { return string(p) }
