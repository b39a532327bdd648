package device

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/progress"
	"github.com/gccl/gccl/internal/wait"
)

func init() {
	_ = RegisterOpener(CUDA, func(ordinal int) (Device, error) {
		drv, err := devlink.Load()
		if err != nil {
			return nil, gccl.Errorf(gccl.SystemError, "device", "opening GPU %d: %v (%w)", ordinal, err, ErrNoDriver)
		}
		return openCUDADriver(drv, ordinal, env.Get().Timeout)
	})
	devlink.Install(
		func(drv cuda.Driver, ordinal int, timeout time.Duration) (any, error) {
			return openCUDADriver(drv, ordinal, timeout)
		},
		func(d any) (cuda.Driver, bool) {
			if g, ok := d.(*CUDADevice); ok && g != nil {
				return g.drv, true
			}
			return nil, false
		},
		func(d any, base uintptr) {
			if g, ok := d.(interface{ gpu() *CUDADevice }); ok && g.gpu() != nil {
				g.gpu().ranges.forget(base)
			}
		})
}

// CUDADevice is a GPU: memory from cuMemAlloc, CUstream handles as
// gccl.Stream values, the device's primary context made current on the
// calling OS thread for every call.
type CUDADevice struct {
	drv     cuda.Driver
	ordinal int
	dev     cuda.Device
	ctx     cuda.Context
	timeout time.Duration

	mu      sync.Mutex
	allocs  map[uintptr]int // base -> size
	streams map[gccl.Stream]bool
	closed  atomic.Bool // set by Close, under mu; Do reads it without

	ranges rangeCache // allocations the driver reported to CheckRange
}

// gpu lets devlink.Forget find the device behind types that embed it.
func (d *CUDADevice) gpu() *CUDADevice { return d }

// openCUDADriver opens GPU ordinal through drv (cuda.Load's driver, or a
// cudafake for tests). Synchronize gives up after timeout (0: GCCL_TIMEOUT).
func openCUDADriver(drv cuda.Driver, ordinal int, timeout time.Duration) (*CUDADevice, error) {
	if drv == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "drv", "nil CUDA driver")
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ordinal", "GPU %d does not exist; this machine has %d", ordinal, n)
	}
	dev, err := drv.DeviceGet(ordinal)
	if err != nil {
		return nil, err
	}
	ctx, err := drv.PrimaryCtxRetain(dev)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = env.Get().Timeout
	}
	return &CUDADevice{drv: drv, ordinal: ordinal, dev: dev, ctx: ctx, timeout: timeout,
		allocs: map[uintptr]int{}, streams: map[gccl.Stream]bool{}}, nil
}

func (d *CUDADevice) Kind() Kind   { return CUDA }
func (d *CUDADevice) Ordinal() int { return d.ordinal }

// Do runs fn on a locked OS thread with the device's context current, as
// every driver call that uses the current context needs.
func (d *CUDADevice) Do(fn func() error) error {
	if d.closed.Load() {
		return gccl.Errorf(gccl.InvalidUsage, "device", "GPU %d is closed", d.ordinal)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.drv.CtxSetCurrent(d.ctx); err != nil {
		return err
	}
	return fn()
}

func (d *CUDADevice) Alloc(size int) (uintptr, error) {
	if size < 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes", size)
	}
	if size == 0 {
		size = 1 // zero-count operations still get a valid pointer, as on the host
	}
	var p uintptr
	err := d.Do(func() (err error) { p, err = d.drv.MemAlloc(size); return err })
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	d.allocs[p] = size
	d.mu.Unlock()
	return p, nil
}

func (d *CUDADevice) Free(p uintptr) error {
	d.mu.Lock()
	_, ok := d.allocs[p]
	delete(d.allocs, p)
	d.mu.Unlock()
	if !ok {
		return gccl.Errorf(gccl.InvalidArgument, "p", "%#x was not allocated by GPU %d's Alloc (or was freed)", p, d.ordinal)
	}
	d.ranges.forget(p)
	return d.Do(func() error { return d.drv.MemFree(p) })
}

// checkRange refuses copies that overrun an allocation made by Alloc;
// pointers from elsewhere (registered, imported) go to the driver as is.
func (d *CUDADevice) checkRange(arg string, p uintptr, n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for base, size := range d.allocs {
		if p >= base && p < base+uintptr(size) {
			if int(p-base)+n > size {
				return gccl.Errorf(gccl.InvalidArgument, arg, "%d bytes at offset %d overrun the %d-byte allocation", n, p-base, size)
			}
			return nil
		}
	}
	return nil
}

func (d *CUDADevice) CopyIn(dst uintptr, src []byte) error {
	if err := d.checkRange("dst", dst, len(src)); err != nil {
		return err
	}
	return d.Do(func() error { return d.drv.MemcpyHtoD(dst, src) })
}

func (d *CUDADevice) CopyOut(dst []byte, src uintptr) error {
	if err := d.checkRange("src", src, len(dst)); err != nil {
		return err
	}
	return d.Do(func() error { return d.drv.MemcpyDtoH(dst, src) })
}

// Memset sets n bytes at p to b (stream-ordered on the legacy stream, then waited for).
func (d *CUDADevice) Memset(p uintptr, b byte, n int) error {
	if err := d.checkRange("p", p, n); err != nil {
		return err
	}
	return d.Do(func() error {
		if err := d.drv.MemsetD8Async(p, b, n, 0); err != nil {
			return err
		}
		return d.drv.StreamSynchronize(0)
	})
}

// NewStream creates a non-blocking CUstream.
func (d *CUDADevice) NewStream() (gccl.Stream, error) {
	var s cuda.Stream
	err := d.Do(func() (err error) { s, err = d.drv.StreamCreate(cuda.StreamNonBlocking); return err })
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	d.streams[gccl.Stream(s)] = true
	d.mu.Unlock()
	return gccl.Stream(s), nil
}

// DestroyStream destroys a stream made by NewStream.
func (d *CUDADevice) DestroyStream(s gccl.Stream) error {
	d.mu.Lock()
	ok := d.streams[s]
	delete(d.streams, s)
	d.mu.Unlock()
	if !ok {
		return gccl.Errorf(gccl.InvalidArgument, "stream", "stream %#x was not made by GPU %d's NewStream", uintptr(s), d.ordinal)
	}
	return d.Do(func() error { return d.drv.StreamDestroy(cuda.Stream(s)) })
}

// Query reports whether the stream's work is done.
func (d *CUDADevice) Query(s gccl.Stream) (bool, error) {
	var done bool
	err := d.Do(func() (err error) { done, err = d.drv.StreamQuery(cuda.Stream(s)); return err })
	return done, err
}

// Synchronize polls the stream until it is done, backing off to 1ms
// (wait.Poller), and gives up with gccl.ErrTimeout after the device's
// timeout; it never blocks in the driver, so a hung kernel cannot hang the
// caller.
func (d *CUDADevice) Synchronize(s gccl.Stream) error {
	defer progress.Enter(true)()
	p := wait.Poller{Deadline: time.Now().Add(d.timeout), What: "stream", MaxSleep: time.Millisecond}
	for {
		done, err := d.Query(s)
		if err != nil || done {
			return err
		}
		if p.Pause() != nil {
			return gccl.Errorf(gccl.TimeoutError, "stream",
				"GPU %d stream %#x not done after %v; a peer may be gone (raise GCCL_TIMEOUT if the work is just long)",
				d.ordinal, uintptr(s), d.timeout)
		}
	}
}

// Close destroys the device's streams, frees its allocations and releases
// the primary context. It is safe on nil and twice.
func (d *CUDADevice) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	if d.closed.Load() {
		d.mu.Unlock()
		return nil
	}
	streams, allocs := d.streams, d.allocs
	d.streams, d.allocs = map[gccl.Stream]bool{}, map[uintptr]int{}
	d.mu.Unlock()
	d.ranges.reset()
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	keep(d.Do(func() error {
		for s := range streams {
			keep(d.drv.StreamDestroy(cuda.Stream(s)))
		}
		for p := range allocs {
			keep(d.drv.MemFree(p))
		}
		return nil
	}))
	d.mu.Lock()
	d.closed.Store(true)
	d.mu.Unlock()
	keep(d.drv.PrimaryCtxRelease(d.dev))
	return first
}

var _ Device = (*CUDADevice)(nil)
