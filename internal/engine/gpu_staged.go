package engine

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/topo"
)

// forceStaged makes every GPU engine use the host-staged backend (tests).
var forceStaged atomic.Bool

// useStaged reports whether a GPU engine must stage through host memory:
// GCCL_P2P_DISABLE is set, a peer is on another host, or there are more
// ranks than the kernels address.
func (e *Engine) useStaged() bool {
	if forceStaged.Load() || env.Get().P2PDisable || e.nranks > kernels.MaxRanks {
		return true
	}
	for _, in := range e.infos {
		if !topo.SameHost(in.HostHash, e.infos[e.rank].HostHash) {
			return true
		}
	}
	return false
}

// gpuStaged runs a GPU communicator's operations on the host engine, staged
// through pinned host memory: on the caller's stream it copies the inputs
// to the host, raises a host-mapped "ready" word and waits (cuStreamWaitValue32)
// for a "done" word that a goroutine raises after running the host plan over
// the transports; then it copies the results back. The stream, not the
// caller, waits. It is the fallback when peers cannot map each other's
// memory, and it cannot be captured in a CUDA graph (a replay would not
// wake the goroutine).
type gpuStaged struct {
	dev *device.CUDADevice
	drv cuda.Driver

	mu      sync.Mutex
	pool    []pinned // blocks whose launch finished, for reuse
	all     []pinned // every block, freed by close
	closed  bool
	serving sync.WaitGroup // serve goroutines still polling a block's words
}

// pinned is one host-mapped staging block. Blocks are reused rather than
// freed per launch: cuMemFreeHost may wait for the device, and the device
// may be waiting (cuStreamWaitValue32) for a later launch's host side.
type pinned struct {
	ptr  uintptr
	size int
}

// The words at the start of a launch's pinned block.
const (
	stagedReady    = 0  // set by the stream when the inputs are on the host
	stagedDone     = 4  // set by the host when the results are ready
	stagedFinished = 8  // set by the stream when the results are copied back
	stagedHeader   = 64 // staging buffers start here
)

// stagedOp is one op with its device buffers and their host copies.
type stagedOp struct {
	dev, host        Op
	sendLen, recvLen int
}

func (g *gpuStaged) Submit(e *Engine, l *launch) error {
	s := cuda.Stream(l.stream)
	ops, size := g.plan(e, l.ops)
	var block pinned
	var flags uintptr
	err := g.dev.Do(func() error {
		if st, err := g.drv.StreamIsCapturing(s); err != nil || st != cuda.CaptureNone {
			return firstErr(err, gccl.Errorf(gccl.InvalidUsage, "stream", "host-staged operations (GCCL_P2P_DISABLE or peers on other hosts) cannot be captured in a CUDA graph"))
		}
		var err error
		if block, err = g.get(size); err != nil {
			return err
		}
		clear(device.HostBytes(block.ptr, stagedHeader))
		if flags, err = g.drv.MemHostGetDevicePointer(block.ptr); err == nil {
			err = g.enqueue(ops, block.ptr, flags, s)
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
	go g.serve(e, l.ticket, ops, block)
	return nil
}

// get returns a free block of at least size bytes, allocating one (with
// the current context set) when none is free.
func (g *gpuStaged) get(size int) (pinned, error) {
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
		return pinned{}, gccl.Errorf(gccl.Code(err), "comm", "allocating %d bytes of pinned staging memory: %w", size, err)
	}
	b := pinned{p, size}
	g.all = append(g.all, b)
	return b, nil
}

func (g *gpuStaged) put(b pinned) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pool = append(g.pool, b)
}

// close waits for the device (the host sides are bounded by the engine's
// timeout, so the streams cannot wait forever) and frees the blocks.
func (g *gpuStaged) close(abort bool) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	all := g.all
	g.all, g.pool = nil, nil
	g.mu.Unlock()
	return g.dev.Do(func() error {
		err := g.drv.CtxSynchronize()
		// The streams are done, so every serve goroutine sees its last word
		// (or the abort) and returns: only then may the blocks go.
		g.serving.Wait()
		for _, b := range all {
			err = firstErr(err, g.drv.MemFreeHost(b.ptr))
		}
		return err
	})
}

// plan gives every op host buffers inside one pinned block and returns its size.
func (g *gpuStaged) plan(e *Engine, ops []Op) ([]stagedOp, int) {
	out := make([]stagedOp, len(ops))
	off := stagedHeader
	place := func(p uintptr, n int) uintptr {
		if p == 0 || n == 0 {
			return 0
		}
		at := off
		off += (n + 63) / 64 * 64
		return uintptr(at) // an offset until the block exists
	}
	for i, o := range ops {
		send, recv := o.sizes(e.nranks)
		if o.Kind == Broadcast && e.rank != o.Root {
			send, o.Send = 0, 0 // NCCL ignores it
		}
		if o.Kind == Reduce && e.rank != o.Root {
			recv, o.Recv = 0, 0
		}
		out[i] = stagedOp{dev: o, host: o, sendLen: send, recvLen: recv}
		out[i].host.Send, out[i].host.Recv = place(o.Send, send), place(o.Recv, recv)
	}
	return out, off
}

// enqueue puts the copies and the handshake on s (block's offsets resolved).
func (g *gpuStaged) enqueue(ops []stagedOp, block, flags uintptr, s cuda.Stream) error {
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
	if err := g.drv.StreamWriteValue32(s, flags+stagedReady, 1, 0); err != nil {
		return err
	}
	if err := g.drv.StreamWaitValue32(s, flags+stagedDone, 1, cuda.WaitValueGEQ); err != nil {
		return err
	}
	for _, o := range ops {
		if o.host.Recv != 0 {
			if err := g.drv.MemcpyHtoDAsync(o.dev.Recv, o.host.Recv, o.recvLen, s); err != nil {
				return err
			}
		}
	}
	return g.drv.StreamWriteValue32(s, flags+stagedFinished, 1, 0)
}

// serve runs the launch on the host in the engine's issue order once the
// stream staged the inputs, releases the stream and the next launch, and
// returns the block to the pool after the results were copied back. A failure becomes the engine's async error;
// the stream is released anyway so it never hangs.
func (g *gpuStaged) serve(e *Engine, ticket uint64, ops []stagedOp, block pinned) {
	defer g.serving.Done()
	ctx, cancel := e.waitCtx(context.Background())
	defer cancel()
	err := e.order.wait(ctx, ticket, e.AsyncError)
	if err == nil {
		err = waitWord(ctx, block.ptr+stagedReady, "waiting for the stream to stage the inputs")
	}
	if err == nil {
		host := make([]Op, len(ops))
		for i, o := range ops {
			host[i] = o.host
		}
		err = e.runHost(ctx, host)
	}
	if err != nil {
		e.setAsyncError(err)
	}
	storeWord(block.ptr+stagedDone, 1)
	e.order.release()
	if waitWord(ctx, block.ptr+stagedFinished, "waiting for the results to be copied back") == nil {
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
			return ctxErr(ctx, doing)
		case <-time.After(sleep):
		}
	}
	return nil
}
