package engine

import (
	"context"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/p2p"
	"github.com/gccl/gccl/transport/topo"
)

// newGPUBackend sets up the GPU data path of e (collective over the ranks):
// it loads the kernels, allocates and zeroes this rank's communication
// buffer and counters, exports the buffer, all-gathers the offers through
// the bootstrap and maps every peer's buffer.
func newGPUBackend(ctx context.Context, e *Engine, dev *device.CUDADevice) (*gpuBackend, error) {
	if e.nranks > kernels.MaxRanks {
		return nil, gccl.Errorf(gccl.InvalidUsage, "nranks", "the GPU backend supports at most %d ranks per communicator, got %d", kernels.MaxRanks, e.nranks)
	}
	img, err := kernels.Fatbin()
	if err != nil {
		return nil, err
	}
	g := newBackendState(dev)
	var offer p2p.Offer
	err = dev.Do(func() error {
		if err := g.allocate(img); err != nil {
			return err
		}
		var err error
		offer, err = p2p.NewOffer(g.drv, dev.Ordinal(), topo.HostHash(), g.buf, gpuBufBytes)
		return err
	})
	if err != nil {
		_ = dev.Do(g.free)
		return nil, err
	}
	if err := g.exchange(ctx, e, offer); err != nil {
		_ = dev.Do(g.free)
		return nil, err
	}
	g.base = kernels.Comm{Counters: g.ctrs, AbortFlag: g.ctlDev + 4*gpuCtlAbort, Status: g.ctlDev + 4*gpuCtlStatus,
		TimeoutNs: uint64(e.timeout.Nanoseconds()), NRanks: int32(e.nranks), Rank: int32(e.rank)}
	for r := range e.nranks {
		g.base.Flags[r] = g.flags(r)
	}
	return g, nil
}

// newBackendState is a backend of dev with its settings from the
// environment and nothing allocated yet.
func newBackendState(dev *device.CUDADevice) *gpuBackend {
	g := &gpuBackend{dev: dev, drv: dev.Driver(), fns: map[string]cuda.Function{}, maxCh: maxChannels()}
	g.llAllowed, g.llForced = llPolicy(env.Get().Proto)
	return g
}

// allocate loads the module and makes the zeroed buffers (current context set).
func (g *gpuBackend) allocate(img []byte) error {
	var err error
	if g.mod, err = g.drv.ModuleLoadData(img); err != nil {
		return gccl.Errorf(gccl.Code(err), "kernels", "loading the kernel module: %w", err)
	}
	if g.buf, err = g.drv.MemAlloc(gpuBufBytes); err != nil {
		return gccl.Errorf(gccl.Code(err), "comm", "allocating the %d-byte communication buffer: %w", gpuBufBytes, err)
	}
	ctrBytes := kernels.CounterWords * 4
	if g.ctrs, err = g.drv.MemAlloc(ctrBytes); err != nil {
		return err
	}
	if g.ctlHost, err = g.drv.MemHostAlloc(gpuCtlBytes, cuda.HostAllocDeviceMap|cuda.HostAllocPortable); err != nil {
		return err
	}
	clear(device.HostBytes(g.ctlHost, gpuCtlBytes))
	if g.ctlDev, err = g.drv.MemHostGetDevicePointer(g.ctlHost); err != nil {
		return err
	}
	if err := g.drv.MemsetD8Async(g.buf, 0, gpuBufBytes, 0); err != nil {
		return err
	}
	if err := g.drv.MemsetD8Async(g.ctrs, 0, ctrBytes, 0); err != nil {
		return err
	}
	return g.drv.StreamSynchronize(0)
}

// exchange all-gathers the offers and maps the peers' buffers. The
// all-gather also makes sure every rank zeroed its flags before any kernel
// can write to them.
func (g *gpuBackend) exchange(ctx context.Context, e *Engine, offer p2p.Offer) error {
	mine, err := offer.MarshalBinary()
	if err != nil {
		return err
	}
	all, err := e.boot.AllGather(ctx, mine)
	if err != nil {
		return gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging GPU buffer handles: %w", err)
	}
	if len(all) != e.nranks {
		return gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(all), e.nranks)
	}
	offers := make([]p2p.Offer, e.nranks)
	for r, b := range all {
		if err := offers[r].UnmarshalBinary(b); err != nil {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d: %w", r, err)
		}
	}
	return g.dev.Do(func() error {
		m, err := p2p.Open(g.drv, e.rank, offers)
		g.peers = m
		return err
	})
}

// free releases what allocate and exchange made (current context set).
func (g *gpuBackend) free() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	keep(g.events.destroy(g.drv)) // after the device's work: pending holds then count as done
	keep(g.peers.Close())
	g.peers = nil
	for _, p := range []*uintptr{&g.buf, &g.ctrs} {
		if *p != 0 {
			keep(g.drv.MemFree(*p))
			*p = 0
		}
	}
	for _, p := range []*uintptr{&g.ctlHost} {
		if *p != 0 {
			keep(g.drv.MemFreeHost(*p))
			*p = 0
		}
	}
	if g.mod != 0 {
		keep(g.drv.ModuleUnload(g.mod))
		g.mod = 0
	}
	return first
}
