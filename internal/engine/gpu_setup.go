package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/peermem"
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
	var offer peermem.Offer
	err = dev.Do(func() error {
		if err := g.allocate(img); err != nil {
			return err
		}
		var err error
		offer, err = peermem.NewOffer(g.drv, dev.Ordinal(), topo.HostHash(), g.buf, g.bufBytes())
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
	g.setBase(e.timeout, e.nranks, e.rank)
	return g, nil
}

// setBase sets the Comm fields every launch shares, once the buffers are
// allocated and the peers' mapped.
func (g *gpuBackend) setBase(timeout time.Duration, nranks, rank int) {
	g.base = kernels.Comm{Counters: g.ctrs, AbortFlag: g.ctlDev + 4*gpuCtlAbort, Status: g.ctlDev + 4*gpuCtlStatus,
		TimeoutNs: uint64(timeout.Nanoseconds()), NRanks: int32(nranks), Rank: int32(rank)}
	for r := range nranks {
		g.base.Flags[r] = g.flags(r)
	}
}

// newBackendState is a backend of dev with its settings from the
// environment and nothing allocated yet.
func newBackendState(dev *device.CUDADevice) *gpuBackend {
	set := env.Get()
	g := &gpuBackend{dev: dev, drv: dev.Driver(), fns: map[string]*loadedFn{}, maxCh: maxChannels(), bulkBytes: bulkBytes(),
		llMax: orDefault(set.GPULLMax, gpuLLMax), pushMax: orDefault(set.GPUPushMax, gpuPushMax)}
	g.llAllowed, g.llForced = llPolicy(set.Proto)
	return g
}

// allocate loads the module and makes the zeroed buffers (current context set).
func (g *gpuBackend) allocate(img []byte) error {
	var err error
	if g.mod, err = g.drv.ModuleLoadData(img); err != nil {
		return gccl.Errorf(gccl.Code(err), "kernels", "loading the kernel module: %w", err)
	}
	if err := g.preload(); err != nil {
		return err
	}
	if g.buf, err = g.drv.MemAlloc(g.bufBytes()); err != nil {
		return gccl.Errorf(gccl.Code(err), "comm", "allocating the %d-byte communication buffer: %w", g.bufBytes(), err)
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
	if err := g.drv.MemsetD8Async(g.buf, 0, g.bufBytes(), 0); err != nil {
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
func (g *gpuBackend) exchange(ctx context.Context, e *Engine, offer peermem.Offer) error {
	b, err := offer.MarshalBinary()
	if err != nil {
		return err
	}
	set := g.settings()
	all, err := e.boot.AllGather(ctx, append(set.encode(), b...))
	if err != nil {
		return gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging GPU buffer handles: %w", err)
	}
	if len(all) != e.nranks {
		return gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(all), e.nranks)
	}
	offers := make([]peermem.Offer, e.nranks)
	for r, b := range all {
		if err := sameSettings(set, b, r); err != nil {
			return err
		}
		if err := offers[r].UnmarshalBinary(b[gpuSettingsLen:]); err != nil {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d: %w", r, err)
		}
	}
	return g.dev.Do(func() error {
		m, err := peermem.Open(g.drv, e.rank, offers)
		g.peers = m
		return err
	})
}

// gpuSettings are the settings every rank derives its grids and kernel
// choices from; ranks that differ would launch kernels that never meet.
type gpuSettings struct {
	MaxCh              uint8  // GCCL_MAX_NCHANNELS
	LLAllowed, LLForce bool   // GCCL_PROTO
	BulkKiB            uint32 // GCCL_GPU_BUFFSIZE
	LLMax, PushMax     uint32 // GCCL_GPU_LL_MAX, GCCL_GPU_PUSH_MAX
}

// gpuSettingsLen is the encoded size of gpuSettings.
var gpuSettingsLen = binary.Size(gpuSettings{})

// settings are this rank's.
func (g *gpuBackend) settings() gpuSettings {
	return gpuSettings{uint8(g.maxCh), g.llAllowed, g.llForced, uint32(g.bulkBytes >> 10), uint32(g.llMax), uint32(g.pushMax)}
}

func (s gpuSettings) encode() []byte {
	b, _ := binary.Append(nil, binary.LittleEndian, s)
	return b
}

func (s gpuSettings) String() string {
	ll := "up to " + strconv.Itoa(int(s.LLMax)) + " bytes"
	switch {
	case !s.LLAllowed:
		ll = "off"
	case s.LLForce:
		ll = "forced"
	}
	return fmt.Sprintf("%d channels, LL %s, push up to %d bytes, a %d KiB staging area", s.MaxCh, ll, s.PushMax, s.BulkKiB)
}

// sameSettings checks rank r's exchanged entry b, which starts with its
// encoded settings, against this rank's.
func sameSettings(mine gpuSettings, b []byte, r int) error {
	var theirs gpuSettings
	if _, err := binary.Decode(b, binary.LittleEndian, &theirs); err != nil {
		return gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent a %d-byte GPU setup entry", r, len(b))
	}
	if theirs != mine {
		return gccl.Errorf(gccl.InvalidUsage, "environment",
			"rank %d runs GPU kernels with %v, this rank with %v: set GCCL_MAX_NCHANNELS, GCCL_PROTO, GCCL_GPU_BUFFSIZE, GCCL_GPU_LL_MAX and GCCL_GPU_PUSH_MAX the same on every rank",
			r, theirs, mine)
	}
	return nil
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
	keep(g.destroyChain())
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

// preload resolves every kernel now. Under CUDA's default lazy module
// loading a kernel is loaded at its first use, which can wait for the
// kernels running in the context: another rank's of this process, waiting
// for this one (a deadlock until the timeout, seen with two ranks per
// process on one GPU). NCCL loads its kernels at init for the same reason.
// An entry point the module lacks (a test's stand-ins) fails at its launch.
func (g *gpuBackend) preload() error {
	g.fnMu.Lock()
	defer g.fnMu.Unlock()
	for _, name := range kernels.EntryPoints() {
		if _, ok := g.fns[name]; ok {
			continue
		}
		f, err := g.drv.ModuleGetFunction(g.mod, name)
		switch {
		case errors.Is(err, cuda.ErrorNotFound):
			continue
		case err != nil:
			return gccl.Errorf(gccl.Code(err), "kernels", "loading kernel %s: %w", name, err)
		}
		g.fns[name] = &loadedFn{f: f, family: kernelFamily(name)}
	}
	ro := maps.Clone(g.fns)
	g.fnsRO.Store(&ro)
	return nil
}
