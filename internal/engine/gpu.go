package engine

import (
	"context"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/peermem"
)

// The GPU backend's communication buffer, one per rank, mapped by every peer:
// the flag array, the direct area of the one-shot (LL) and push all-reduces
// and the bulk area that every other kernel stages through (gpuBulkBytes, or
// GCCL_GPU_BUFFSIZE within gpuBulkMin..gpuBulkMax). 80 MiB per rank in all
// by default, a quarter of NCCL's default buffers.
const (
	gpuFlagsBytes  = 64 << 10
	gpuDirectBytes = 16 << 20
	gpuBulkBytes   = 64 << 20
	gpuBulkMin     = 1 << 20
	gpuBulkMax     = 1 << 30

	// gpuLLMax is the largest all-reduce (bytes) that takes the one-shot
	// LL kernel by default (GCCL_GPU_LL_MAX), gpuPushMax the largest that
	// takes the push kernel (GCCL_GPU_PUSH_MAX); larger ones take the
	// pipelined two-shot. Either needs its copies to fit the direct area.
	gpuLLMax   = 128 << 10
	gpuPushMax = 1 << 20
	// gpuChannelBytes is how many bytes one channel (block) should move
	// before another channel is worth starting.
	gpuChannelBytes = 32 << 10
	// gpuSingleCopyMin is the smallest eager one-rank collective that is a
	// device-to-device copy rather than a kernel (issue 18: the staged
	// kernel moved 336 GB/s at 16 MiB on an H100, NCCL's copy 1130).
	gpuSingleCopyMin = 1 << 20
	// gpuMaxChannels is the default grid cap; GCCL_MAX_NCHANNELS sets
	// another, up to kernels.MaxChannels. Every kernel's blocks must be
	// co-resident (one block per SM at most is assumed).
	gpuMaxChannels = 32
)

// gpuBackend runs operations as kernels on the caller's CUstream. Nothing on
// the host waits for the GPU: the kernels synchronise among themselves
// through flags and counters in device memory that they advance, so a
// captured CUDA graph can be replayed any number of times.
type gpuBackend struct {
	dev *device.CUDADevice
	drv cuda.Driver
	mod cuda.Module

	buf  uintptr // this rank's communication buffer (gpuBufBytes)
	ctrs uintptr // this rank's counters (local)
	// ctlHost is host-mapped pinned memory the kernels see at ctlDev: word
	// 0 the abort flag the host sets, word 1 the status word the kernels
	// report failures to, so no launch needs a copy back to learn it.
	ctlHost uintptr
	ctlDev  uintptr
	peers   *peermem.Mapping
	base    kernels.Comm // the fields every launch shares

	fnMu sync.Mutex
	fns  map[string]*loadedFn // loaded kernels, under fnMu
	// fnsRO is a copy of fns that launches read without locking; fn
	// replaces it (copy on write) when it loads a kernel.
	fnsRO atomic.Pointer[map[string]*loadedFn]
	// last is the path of the latest operation enqueued (LastGPUPath).
	last atomic.Pointer[loadedFn]
	// args is reused by every launch; launches of one engine run one at a
	// time (under its ticket) and the driver copies the values at launch.
	args cuda.Args

	maxCh     int // the grid cap: gpuMaxChannels or GCCL_MAX_NCHANNELS
	bulkBytes int // the bulk area's size: gpuBulkBytes or GCCL_GPU_BUFFSIZE
	llMax     int // gpuLLMax or GCCL_GPU_LL_MAX
	pushMax   int // gpuPushMax or GCCL_GPU_PUSH_MAX

	llAllowed, llForced bool // GCCL_PROTO for the one-shot path (llPolicy)

	stats  regStats    // Stats: staged bytes, zero-copy ops (gpu_reg.go)
	events eventPool   // completion events of zero-copy holds (gpu_regevents.go)
	chain  streamChain // issue order across streams (gpu_chain.go), under the ticket

	mu     sync.Mutex
	closed bool
}

// backendCloser is a backend holding resources that Close and Abort free.
type backendCloser interface {
	close(abort bool) error
}

// useGPU switches the engine to a GPU backend when its device is a GPU
// (called by New when Config.Backend is nil; collective over the ranks):
// kernels over peer-mapped memory, or host staging when peers cannot map
// each other (GCCL_P2P_DISABLE, other hosts, more than kernels.MaxRanks).
func (e *Engine) useGPU(ctx context.Context) error {
	dev, ok := gpuDevice(e.dev)
	if !ok {
		return nil
	}
	if e.useStaged() {
		e.backend = &gpuStaged{dev: dev, drv: dev.Driver()}
		return nil
	}
	g, err := newGPUBackend(ctx, e, dev)
	if err != nil {
		return err
	}
	e.backend = g
	return nil
}

// closeBackend frees the backend's resources, if it holds any, then the
// communicator's collective buffer registrations (gpu_reg.go).
func (e *Engine) closeBackend(abort bool) error {
	var err error
	if c, ok := e.backend.(backendCloser); ok {
		err = c.close(abort)
	}
	return firstErr(err, e.unregisterAll())
}

// gpuDevice returns the device when the engine runs on a GPU.
func gpuDevice(d device.Device) (*device.CUDADevice, bool) {
	cd, ok := d.(*device.CUDADevice)
	return cd, ok && d.Kind() == device.CUDA
}

// flags, direct and bulk are rank r's areas as mapped here.
func (g *gpuBackend) flags(r int) uintptr  { return g.peers.Ptrs[r] }
func (g *gpuBackend) direct(r int) uintptr { return g.peers.Ptrs[r] + gpuFlagsBytes }
func (g *gpuBackend) bulk(r int) uintptr   { return g.peers.Ptrs[r] + gpuFlagsBytes + gpuDirectBytes }

// Submit enqueues the launch's kernels and copies on its stream and returns.
func (g *gpuBackend) Submit(e *Engine, l *launch) error {
	if err := e.waitTurn(l.ticket); err != nil {
		return err // LaunchGroup releases the ticket of a failed Submit
	}
	if err := g.checkStatus(e); err != nil {
		return err
	}
	if err := g.dev.Do(func() error { return g.enqueue(e, l) }); err != nil {
		e.setAsyncError(err)
		return err
	}
	e.order.release()
	return nil
}

// enqueue issues l's collectives in order, then its point-to-point ops,
// after the communicator's previous launch whatever its stream (device
// context current, l's ticket held).
func (g *gpuBackend) enqueue(e *Engine, l *launch) error {
	s := cuda.Stream(l.stream)
	if err := g.join(s); err != nil {
		return err
	}
	first := len(l.ops)
	for i := range l.ops {
		if l.ops[i].Kind.IsP2P() {
			first = i
			break
		}
		if err := g.collective(e, &l.ops[i], s); err != nil {
			return gccl.Errorf(gccl.Code(err), "comm", "%v: %w", l.ops[i].String(), err)
		}
	}
	return g.p2p(e, l.ops[first:], s)
}

// doneOnReturn: Submit enqueues everything in the call and keeps no
// reference to the launch, which LaunchGroup may then reuse.
func (g *gpuBackend) doneOnReturn() {}

// checkStatus turns a failure a kernel reported into the engine's async error.
func (g *gpuBackend) checkStatus(e *Engine) error {
	var err error
	switch st := atomic.LoadUint32(g.ctlWord(gpuCtlStatus)); st {
	case kernels.StatusOK:
		return nil
	case kernels.StatusTimeout:
		err = gccl.Errorf(gccl.TimeoutError, "comm", "a GPU kernel waited longer than the timeout for a peer; a peer is gone or stuck (raise GCCL_TIMEOUT if it is just slow)")
	case kernels.StatusAborted:
		err = gccl.Errorf(gccl.RemoteError, "comm", "a GPU kernel saw the communicator aborted")
	case kernels.StatusBadUsage:
		err = gccl.Errorf(gccl.InvalidUsage, "comm", "the ranks disagreed on buffer registration for an operation (registered on some ranks only, or at different offsets or registrations); pass registered buffers at the same offset on every rank, or unregistered ones on all")
	default:
		err = gccl.Errorf(gccl.InternalError, "comm", "a GPU kernel reported status %d (scratch too small for the launch)", st)
	}
	e.setAsyncError(err)
	return err
}

// The words of the host-mapped control block.
const (
	gpuCtlAbort  = 0
	gpuCtlStatus = 1
	gpuCtlBytes  = 8
)

// ctlWord is word i of the control block, as the host sees it.
func (g *gpuBackend) ctlWord(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&device.HostBytes(g.ctlHost, gpuCtlBytes)[4*i]))
}

// loadedFn is a loaded kernel and its family (kernelFamily), or with no
// function one of the paths that are not kernels (pathCopy, pathNone).
type loadedFn struct {
	f      cuda.Function
	family string
}

var pathCopy, pathNone = &loadedFn{family: PathCopy}, &loadedFn{family: PathNone}

// fn returns the kernel's function, loading it once; loaded kernels are
// found without taking a lock.
func (g *gpuBackend) fn(name string) (*loadedFn, error) {
	if m := g.fnsRO.Load(); m != nil {
		if f, ok := (*m)[name]; ok {
			return f, nil
		}
	}
	g.fnMu.Lock()
	defer g.fnMu.Unlock()
	if f, ok := g.fns[name]; ok {
		return f, nil
	}
	f, err := g.drv.ModuleGetFunction(g.mod, name)
	if err != nil {
		return nil, gccl.Errorf(gccl.Code(err), "kernels", "kernel %s: %w", name, err)
	}
	lf := &loadedFn{f: f, family: kernelFamily(name)}
	g.fns[name] = lf
	ro := maps.Clone(g.fns)
	g.fnsRO.Store(&ro)
	return lf, nil
}

// LastGPUPath is how the GPU backend ran the latest operation enqueued on
// this engine: the kernel family (a kernel name of package kernels, such
// as kernels.AllReducePipelined), PathCopy or PathNone; "" before the
// first one and on other backends. GPUTraffic turns it into bytes.
func (e *Engine) LastGPUPath() string {
	g, ok := e.backend.(*gpuBackend)
	if !ok {
		return ""
	}
	if lf := g.last.Load(); lf != nil {
		return lf.family
	}
	return ""
}

// launch starts kernel name with grid blocks on s: the Comm, then args.
// It reuses g.args, so it must run under the engine's ticket.
func (g *gpuBackend) launch(name string, grid int, s cuda.Stream, c *kernels.Comm, args func(*cuda.Args)) error {
	lf, err := g.fn(name)
	if err != nil {
		return err
	}
	g.last.Store(lf)
	a := &g.args
	a.Reset()
	c.Put(a.Slot(kernels.CommBytes, kernels.CommAlign))
	if args != nil {
		args(a)
	}
	return g.drv.LaunchKernel(lf.f, cuda.Dim3{X: uint32(grid), Y: 1, Z: 1}, cuda.Dim3{X: kernels.Threads, Y: 1, Z: 1}, 0, s, a)
}

// channels is the grid for moving bytes: one block per gpuChannelBytes, at
// least one, at most the grid cap g.maxCh. Every rank computes the same
// value (the ranks check at init that their caps agree).
func (g *gpuBackend) channels(bytes int) int {
	return min(max(1, (bytes+gpuChannelBytes-1)/gpuChannelBytes), g.maxCh)
}

// maxChannels is the grid cap GCCL_MAX_NCHANNELS asks for, within
// 1..kernels.MaxChannels, or gpuMaxChannels.
func maxChannels() int {
	if v := env.Get().MaxNChannels; v > 0 {
		return min(v, kernels.MaxChannels)
	}
	return gpuMaxChannels
}

// bulkBytes is the bulk area size GCCL_GPU_BUFFSIZE asks for, rounded
// down to 64 KiB within gpuBulkMin..gpuBulkMax, or gpuBulkBytes.
func bulkBytes() int {
	if v := env.Get().GPUBuffSize; v > 0 {
		return min(max(v, gpuBulkMin), gpuBulkMax) &^ (64<<10 - 1)
	}
	return gpuBulkBytes
}

// orDefault is v when it is positive, else def.
func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// bufBytes is the size of the communication buffer: flags, direct and bulk.
func (g *gpuBackend) bufBytes() int { return gpuFlagsBytes + gpuDirectBytes + g.bulkBytes }

// llPolicy reads GCCL_PROTO for the all-reduce's LL one-shot path: allowed
// unless the list leaves LL out; forced (whenever the direct area holds the
// operation, not only up to g.llMax) when it allows LL but not Simple.
// A leading ^ excludes the listed protocols, as in NCCL.
func llPolicy(proto string) (allowed, forced bool) {
	s := strings.ToUpper(strings.TrimSpace(proto))
	if s == "" {
		return true, false
	}
	exclude := strings.HasPrefix(s, "^")
	has := map[string]bool{}
	for _, f := range strings.Split(strings.TrimPrefix(s, "^"), ",") {
		has[strings.TrimSpace(f)] = true
	}
	ll, simple := has["LL"] != exclude, has["SIMPLE"] != exclude
	return ll, ll && !simple
}

// copyAsync is a stream-ordered device copy, skipped when empty or in place.
func (g *gpuBackend) copyAsync(dst, src uintptr, n int, s cuda.Stream) error {
	if n == 0 || dst == src {
		return nil
	}
	return g.drv.MemcpyDtoDAsync(dst, src, n, s)
}

// close waits for the device's work (the kernels' own deadlines bound it;
// with abort they are told to give up first), then frees the buffers.
func (g *gpuBackend) close(abort bool) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	if abort && g.ctlHost != 0 {
		atomic.StoreUint32(g.ctlWord(gpuCtlAbort), 1)
	}
	var first error
	_ = g.dev.Do(func() error {
		// A stream the user destroyed cannot be queried, so wait for the
		// whole context; every kernel wait has a deadline (TimeoutNs).
		first = g.drv.CtxSynchronize()
		first = firstErr(first, g.free())
		return nil
	})
	return first
}
