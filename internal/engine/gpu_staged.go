package engine

import (
	"context"
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
	var block, flags uintptr
	err := g.dev.Do(func() error {
		if st, err := g.drv.StreamIsCapturing(s); err != nil || st != cuda.CaptureNone {
			return firstErr(err, gccl.Errorf(gccl.InvalidUsage, "stream", "host-staged operations (GCCL_P2P_DISABLE or peers on other hosts) cannot be captured in a CUDA graph"))
		}
		var err error
		if block, err = g.drv.MemHostAlloc(size, cuda.HostAllocDeviceMap|cuda.HostAllocPortable); err != nil {
			return err
		}
		clear(device.HostBytes(block, stagedHeader))
		if flags, err = g.drv.MemHostGetDevicePointer(block); err == nil {
			err = g.enqueue(ops, block, flags, s)
		}
		if err != nil {
			_ = g.drv.MemFreeHost(block)
		}
		return err
	})
	if err != nil {
		return err
	}
	go g.serve(e, l.ticket, ops, block)
	return nil
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
// stream staged the inputs, releases the stream, and frees the block after
// the results were copied back. A failure becomes the engine's async error;
// the stream is released anyway so it never hangs.
func (g *gpuStaged) serve(e *Engine, ticket uint64, ops []stagedOp, block uintptr) {
	defer e.order.release()
	ctx, cancel := e.waitCtx(context.Background())
	defer cancel()
	err := e.order.wait(ctx, ticket, e.AsyncError)
	if err == nil {
		err = waitWord(ctx, block+stagedReady, "waiting for the stream to stage the inputs")
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
	storeWord(block+stagedDone, 1)
	if waitWord(ctx, block+stagedFinished, "waiting for the results to be copied back") != nil {
		return // the stream is stuck or gone: leak the block rather than free it under a copy
	}
	_ = g.dev.Do(func() error { return g.drv.MemFreeHost(block) })
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
