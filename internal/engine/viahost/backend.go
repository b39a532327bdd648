package viahost

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/engine/internal/streamjoin"
)

// Backend runs a GPU communicator's operations on the host backend,
// through pinned host memory: on the caller's stream it copies the inputs
// to the host, raises a host-mapped "ready" word and waits (cuStreamWaitValue32)
// for a "done" word that a goroutine raises after running the host plan over
// the transports; then it copies the results back. The stream, not the
// caller, waits. It is the fallback when peers cannot map each other's
// memory, and it cannot be captured in a CUDA graph (a replay would not
// wake the goroutine).
type Backend struct {
	rank, nranks int

	dev   *device.CUDADevice
	drv   cuda.Driver
	host  *host.Backend      // runs the ops on their host copies
	links *streamjoin.Events // joins a launch's streams

	mu      sync.Mutex
	pool    []pinned // blocks whose launch finished, for reuse
	all     []pinned // every block, freed by close
	closed  bool
	serving sync.WaitGroup // serve goroutines still polling a block's words
}

// New returns the constructor of a GPU-via-host backend whose host backend
// has cfg, for engine.Config.
func New(cfg host.Config) engine.NewBackend {
	return func(ctx context.Context, s engine.Setup) (engine.Backend, error) { return Open(ctx, s, cfg) }
}

// Open builds the backend on s.Device, a CUDA device, and its host
// backend (collective over the ranks, as host.Open).
func Open(ctx context.Context, s engine.Setup, cfg host.Config) (*Backend, error) {
	dev, ok := s.Device.(*device.CUDADevice)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidArgument, "device", "the GPU-via-host backend needs a CUDA device, got %v", s.Device.Kind())
	}
	h, err := host.Open(ctx, s, cfg)
	if err != nil {
		return nil, err
	}
	drv, _ := devlink.Driver(dev)
	return &Backend{rank: s.Rank, nranks: s.NRanks, dev: dev, drv: drv, host: h, links: streamjoin.New(drv)}, nil
}

// pinned is one host-mapped block of a launch's host copies. Blocks are reused rather than
// freed per launch: cuMemFreeHost may wait for the device, and the device
// may be waiting (cuStreamWaitValue32) for a later launch's host side.
type pinned struct {
	ptr  uintptr
	size int
}

// The words at the start of a launch's pinned block.
const (
	wordReady    = 0  // set by the stream when the inputs are on the host
	wordDone     = 4  // set by the host when the results are ready
	wordFinished = 8  // set by the stream when the results are copied back
	blockHeader  = 64 // the host copies of the buffers start here
)

// hostOp is one op with its device buffers and their host copies.
type hostOp struct {
	dev, host        engine.Op
	sendLen, recvLen int
}

// Submit enqueues the copies and the handshake on the launch's stream and
// starts the goroutine that runs the ops on the host in the launch's turn
// and then ends the launch. A launch on several streams runs on the first,
// after the work enqueued so far on the others, which then wait for it.
func (g *Backend) Submit(l *engine.Launch) error {
	s := cuda.Stream(l.Stream)
	ops, size := g.plan(l.Ops)
	var block pinned
	var flags uintptr
	err := g.dev.Do(func() error {
		for _, h := range append([]gccl.Stream{l.Stream}, l.More...) {
			if st, err := g.drv.StreamIsCapturing(cuda.Stream(h)); err != nil || st != cuda.CaptureNone {
				return errs.First(err, gccl.Errorf(gccl.InvalidUsage, "stream", "stream %#x: %w", uintptr(h), gpuplan.ErrViaHostCapture))
			}
		}
		var err error
		if block, err = g.get(size); err != nil {
			return err
		}
		clear(device.HostBytes(block.ptr, blockHeader))
		if flags, err = g.drv.MemHostGetDevicePointer(block.ptr); err == nil {
			err = g.links.Before(s, l.More)
		}
		if err == nil {
			err = g.enqueue(ops, block.ptr, flags, s)
		}
		if err == nil {
			err = g.links.After(s, l.More)
		}
		if err != nil {
			g.put(block)
		}
		return err
	})
	if err != nil {
		return err
	}
	g.serving.Add(1)
	go g.serve(l, ops, block)
	return nil
}

// get returns a free block of at least size bytes, allocating one (with
// the current context set) when none is free.
func (g *Backend) get(size int) (pinned, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return pinned{}, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator is closed")
	}
	for i, b := range g.pool {
		if b.size >= size {
			g.pool = append(g.pool[:i], g.pool[i+1:]...)
			return b, nil
		}
	}
	size = max(4096, 1<<bits.Len(uint(size-1)))
	p, err := g.drv.MemHostAlloc(size, cuda.HostAllocDeviceMap|cuda.HostAllocPortable)
	if err != nil {
		return pinned{}, gccl.Errorf(gccl.Code(err), "comm", "allocating %d bytes of pinned host memory: %w", size, err)
	}
	b := pinned{p, size}
	g.all = append(g.all, b)
	return b, nil
}

func (g *Backend) put(b pinned) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pool = append(g.pool, b)
}

// Close waits for the device (the host sides are bounded by the engine's
// timeout, so the streams cannot wait forever), frees the blocks and
// closes the host backend. Safe twice.
func (g *Backend) Close(abort bool) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return g.host.Close(abort)
	}
	g.closed = true
	all := g.all
	g.all, g.pool = nil, nil
	g.mu.Unlock()
	err := g.dev.Do(func() error {
		err := g.drv.CtxSynchronize()
		// The streams are done, so every serve goroutine sees its last word
		// (or the abort) and returns: only then may the blocks go.
		g.serving.Wait()
		for _, b := range all {
			err = errs.First(err, g.drv.MemFreeHost(b.ptr))
		}
		return errs.First(err, g.links.Close())
	})
	return errs.First(err, g.host.Close(abort))
}

// plan gives every op host buffers inside one pinned block and returns its size.
func (g *Backend) plan(ops []engine.Op) ([]hostOp, int) {
	out := make([]hostOp, len(ops))
	off := blockHeader
	place := func(p uintptr, n int) uintptr {
		if p == 0 || n == 0 {
			return 0
		}
		at := off
		off += (n + 63) / 64 * 64
		return uintptr(at) // an offset until the block exists
	}
	for i, o := range ops {
		send, recv := o.Sizes(g.nranks)
		if o.Kind == algo.Broadcast && g.rank != o.Root {
			send, o.Send = 0, 0 // NCCL ignores it
		}
		if o.Kind == algo.Reduce && g.rank != o.Root {
			recv, o.Recv = 0, 0
		}
		out[i] = hostOp{dev: o, host: o, sendLen: send, recvLen: recv}
		out[i].host.Send, out[i].host.Recv = place(o.Send, send), place(o.Recv, recv)
	}
	return out, off
}

// enqueue puts the copies and the handshake on s (block's offsets resolved).
func (g *Backend) enqueue(ops []hostOp, block, flags uintptr, s cuda.Stream) error {
	for i := range ops {
		if ops[i].host.Send != 0 {
			ops[i].host.Send += block
		}
		if ops[i].host.Recv != 0 {
			ops[i].host.Recv += block
		}
	}
	for _, o := range ops {
		if o.host.Send != 0 {
			if err := g.drv.MemcpyDtoHAsync(o.host.Send, o.dev.Send, o.sendLen, s); err != nil {
				return err
			}
		}
	}
	if err := g.drv.StreamWriteValue32(s, flags+wordReady, 1, 0); err != nil {
		return err
	}
	if err := g.drv.StreamWaitValue32(s, flags+wordDone, 1, cuda.WaitValueGEQ); err != nil {
		return err
	}
	for _, o := range ops {
		if o.host.Recv != 0 {
			if err := g.drv.MemcpyHtoDAsync(o.dev.Recv, o.host.Recv, o.recvLen, s); err != nil {
				return err
			}
		}
	}
	return g.drv.StreamWriteValue32(s, flags+wordFinished, 1, 0)
}

// serve runs the launch on the host in its turn once the stream copied
// the inputs to the host, releases the stream and ends the launch (the
// next may run), and returns the block to the pool after the results were
// copied back. A failure becomes the engine's async error; the stream is
// released anyway so it never hangs.
func (g *Backend) serve(l *engine.Launch, ops []hostOp, block pinned) {
	defer g.serving.Done()
	ctx := l.Context()
	err := l.WaitTurn(ctx)
	if err == nil {
		err = waitWord(ctx, block.ptr+wordReady, "waiting for the stream to copy the inputs to the host")
	}
	if err == nil {
		host := make([]engine.Op, len(ops))
		for i, o := range ops {
			host[i] = o.host
		}
		err = g.host.Run(ctx, host)
	}
	l.Fail(err)
	storeWord(block.ptr+wordDone, 1)
	after, cancel := l.ContextAfterDone()
	defer cancel()
	l.Done(nil)
	if waitWord(after, block.ptr+wordFinished, "waiting for the results to be copied back") == nil {
		g.put(block) // else the stream is stuck or gone: never reuse a block a copy may still touch
	}
}

func word(p uintptr) *uint32 {
	return (*uint32)(unsafe.Pointer(unsafe.SliceData(device.HostBytes(p, 4))))
}

func storeWord(p uintptr, v uint32) { atomic.StoreUint32(word(p), v) }

// waitWord polls the host word at p until it is nonzero, backing off to 1 ms.
func waitWord(ctx context.Context, p uintptr, doing string) error {
	for sleep := time.Microsecond; atomic.LoadUint32(word(p)) == 0; sleep = min(2*sleep, time.Millisecond) {
		select {
		case <-ctx.Done():
			return errs.Ctx(ctx, doing)
		case <-time.After(sleep):
		}
	}
	return nil
}
