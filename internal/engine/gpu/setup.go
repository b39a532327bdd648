package gpu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/gpu/regs"
	"github.com/gccl/gccl/internal/engine/internal/ctlblock"
	"github.com/gccl/gccl/internal/engine/internal/streamjoin"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/regcache"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/peermem"
	"github.com/gccl/gccl/transport/topo"
)

// Config is what the GPU backend needs beyond the engine's Setup.
type Config struct {
	// Regs is the communicator's registrations (package bufreg), which
	// the backend finds operations' buffers in; with it, captured
	// operations register their buffers for the graph's lifetime
	// (GCCL_GRAPH_REGISTER). nil = none.
	Regs *regcache.Cache
}

// New returns the constructor of a GPU backend with cfg, for engine.Config.
func New(cfg Config) engine.NewBackend {
	return func(ctx context.Context, s engine.Setup) (engine.Backend, error) { return Open(ctx, s, cfg) }
}

// Open sets up the GPU data path on s.Device, a CUDA device (collective
// over the ranks): it loads the kernels, allocates and zeroes this rank's
// communication buffer and counters, exports the buffer, all-gathers the
// offers through the bootstrap and maps every peer's buffer.
func Open(ctx context.Context, s engine.Setup, cfg Config) (*Backend, error) {
	dev, ok := s.Device.(*device.CUDADevice)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidArgument, "device", "the GPU backend needs a CUDA device, got %v", s.Device.Kind())
	}
	if s.NRanks > kernels.MaxRanks {
		return nil, gccl.Errorf(gccl.InvalidUsage, "nranks", "the GPU backend supports at most %d ranks per communicator, got %d", kernels.MaxRanks, s.NRanks)
	}
	img, err := kernels.Fatbin()
	if err != nil {
		return nil, err
	}
	g := newBackendState(dev, s, cfg)
	var offer peermem.Offer
	err = dev.Do(func() error {
		if err := g.allocate(img); err != nil {
			return err
		}
		var err error
		offer, err = peermem.NewOffer(g.drv, dev.Ordinal(), topo.HostHash(), g.buf, g.set.BufBytes())
		return err
	})
	if err != nil {
		_ = dev.Do(g.free)
		return nil, err
	}
	if err := g.exchange(ctx, s.Boot, offer); err != nil {
		_ = dev.Do(g.free)
		return nil, err
	}
	g.setBase()
	return g, nil
}

// setBase sets the Comm fields every launch shares, once the buffers are
// allocated and the peers' mapped.
func (g *Backend) setBase() {
	g.base = kernels.DevComm{Counters: g.ctrs, AbortFlag: g.ctl.AbortFlag(), Status: g.ctl.Status(),
		TimeoutNs: uint64(g.timeout.Nanoseconds()), NRanks: int32(g.nranks), Rank: int32(g.rank)}
	for r := range g.nranks {
		g.base.Flags[r] = g.flags(r)
	}
}

// newBackendState is a backend of dev with its settings from the
// environment and nothing allocated yet.
func newBackendState(dev *device.CUDADevice, s engine.Setup, cfg Config) *Backend {
	set := env.Get()
	drv, _ := devlink.Driver(dev)
	g := &Backend{rank: s.Rank, nranks: s.NRanks, timeout: s.Timeout, log: s.Log, dev: dev, drv: drv, fns: map[string]*loadedFn{},
		set:       gpuplan.NewSettings(set.MaxNChannels, set.GPUBuffSize, set.GPULLMax, set.GPUPushMax, set.Algos, set.Protos),
		checkDesc: set.GPUCheckDescriptors}
	g.links = streamjoin.New(g.drv)
	g.regs = regs.New(regs.Config{Regs: cfg.Regs, Net: s.Boot, NRanks: s.NRanks, Device: dev, Driver: g.drv, Timeout: s.Timeout, Log: s.Log})
	return g
}

// smCount is the number of multiprocessors of GPU ordinal (zero when the
// driver cannot tell: the grid cap of a shared GPU is then one channel).
func smCount(drv cuda.Driver, ordinal int) int {
	d, err := drv.DeviceGet(ordinal)
	if err != nil {
		return 0
	}
	n, err := drv.DeviceAttribute(cuda.AttrMultiprocessorCount, d)
	if err != nil {
		return 0
	}
	return n
}

// reserveStack sets the context's stack limit to n bytes a thread, or
// keeps the current limit when that is larger (the application's kernels
// may need it). Setting it makes the driver reserve the local memory now:
// otherwise it does so at the first launch that needs it, and that waits
// for every kernel running in the context.
func reserveStack(drv cuda.Driver, n int) error {
	cur, err := drv.CtxLimit(cuda.LimitStackSize)
	if err != nil {
		return gccl.Errorf(gccl.Code(err), "kernels", "reading the context's stack limit: %w", err)
	}
	if err := drv.CtxSetLimit(cuda.LimitStackSize, max(cur, n)); err != nil {
		return gccl.Errorf(gccl.Code(err), "kernels", "setting the context's stack limit to %d bytes a thread (gccl's kernels need %d): %w", max(cur, n), n, err)
	}
	return nil
}

// allocate loads the module and makes the zeroed buffers (current context set).
func (g *Backend) allocate(img []byte) error {
	var err error
	if g.mod, err = g.drv.ModuleLoadData(img); err != nil {
		return gccl.Errorf(gccl.Code(err), "kernels", "loading the kernel module: %w", err)
	}
	if err := g.preload(); err != nil {
		return err
	}
	if g.buf, err = g.drv.MemAlloc(g.set.BufBytes()); err != nil {
		return gccl.Errorf(gccl.Code(err), "comm", "allocating the %d-byte communication buffer: %w", g.set.BufBytes(), err)
	}
	ctrBytes := kernels.CounterWords * 4
	if g.ctrs, err = g.drv.MemAlloc(ctrBytes); err != nil {
		return err
	}
	if g.ctl.Block, err = ctlblock.Alloc(g.drv); err != nil {
		return err
	}
	if err := g.drv.MemsetD8Async(g.buf, 0, g.set.BufBytes(), 0); err != nil {
		return err
	}
	if err := g.drv.MemsetD8Async(g.ctrs, 0, ctrBytes, 0); err != nil {
		return err
	}
	return g.drv.StreamSynchronize(0)
}

// exchange all-gathers the offers, with the settings and each rank's view
// of its GPU links (links.go), records the link to every peer and maps the
// peers' buffers. The all-gather also makes sure every rank zeroed its
// flags before any kernel can write to them.
func (g *Backend) exchange(ctx context.Context, boot engine.Bootstrap, offer peermem.Offer) error {
	b, err := offer.MarshalBinary()
	if err != nil {
		return err
	}
	set := g.settings()
	view := localLinks(g.drv, g.dev.Ordinal())
	all, err := boot.AllGather(ctx, append(view.encode(set.encode()), b...))
	if err != nil {
		return gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging GPU buffer handles: %w", err)
	}
	if len(all) != g.nranks {
		return gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(all), g.nranks)
	}
	offers := make([]peermem.Offer, g.nranks)
	views := make([]linkView, g.nranks)
	for r, b := range all {
		if _, err := sameSettings(set, b, r); err != nil {
			return err
		}
		v, rest, ok := decodeLinkView(b[gpuSettingsLen:])
		if !ok {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent a %d-byte GPU setup entry, too short for its links", r, len(b))
		}
		views[r] = v
		if err := offers[r].UnmarshalBinary(rest); err != nil {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d: %w", r, err)
		}
	}
	g.peerLink = peerLinks(views, g.rank)
	if g.log != nil {
		g.log.Debug("GPU links to the peers", "links", g.peerLink)
	}
	if sharesGPUInProcess(offers) {
		if err := g.shareSMs(ctx, boot, offers); err != nil {
			return err
		}
	}
	return g.dev.Do(func() error {
		m, err := peermem.Open(g.drv, g.rank, offers)
		g.peers = m
		return err
	})
}

// gpuSettings are the settings every rank derives its grids and kernel
// choices from; ranks that differ would launch kernels that never meet.
type gpuSettings struct {
	MaxCh          uint8          // GCCL_MAX_NCHANNELS
	Algos          algo.Allowed   // GCCL_ALGO
	Protos         algo.Protocols // GCCL_PROTO
	BulkKiB        uint32         // GCCL_GPU_BUFFSIZE
	LLMax, PushMax uint32         // GCCL_GPU_LL_MAX, GCCL_GPU_PUSH_MAX
	CheckDesc      bool           // GCCL_GPU_CHECK_DESCRIPTORS
}

// gpuSettingsLen is the encoded size of gpuSettings.
var gpuSettingsLen = binary.Size(gpuSettings{})

// settings are this rank's.
func (g *Backend) settings() gpuSettings {
	s := g.set
	return gpuSettings{uint8(s.MaxChannels), s.Algos, s.Protos, uint32(s.BulkBytes >> 10), uint32(s.LLMax), uint32(s.PushMax), g.checkDesc}
}

func (s gpuSettings) encode() []byte {
	b, _ := binary.Append(nil, binary.LittleEndian, s)
	return b
}

func (s gpuSettings) String() string {
	ll := "up to " + strconv.Itoa(int(s.LLMax)) + " bytes"
	switch {
	case !s.Protos.Has(algo.LL):
		ll = "off"
	case s.Protos.LLForced():
		ll = "forced"
	}
	check := ""
	if s.CheckDesc {
		check = ", descriptor checks"
	}
	return fmt.Sprintf("%d channels, algorithms %v, LL %s, push up to %d bytes, a %d KiB staging area%s", s.MaxCh, s.Algos, ll, s.PushMax, s.BulkKiB, check)
}

// sameSettings checks rank r's exchanged entry b, which starts with its
// encoded settings, against this rank's, and returns r's.
func sameSettings(mine gpuSettings, b []byte, r int) (gpuSettings, error) {
	var theirs gpuSettings
	if _, err := binary.Decode(b, binary.LittleEndian, &theirs); err != nil {
		return theirs, gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent a %d-byte GPU setup entry", r, len(b))
	}
	if theirs != mine {
		return theirs, gccl.Errorf(gccl.InvalidUsage, "environment",
			"rank %d runs GPU kernels with %v, this rank with %v: set GCCL_MAX_NCHANNELS, GCCL_ALGO, GCCL_PROTO, GCCL_GPU_BUFFSIZE, GCCL_GPU_LL_MAX, GCCL_GPU_PUSH_MAX and GCCL_GPU_CHECK_DESCRIPTORS the same on every rank",
			r, theirs, mine)
	}
	return theirs, nil
}

// sharesGPUInProcess reports whether two ranks of the offers run on one GPU
// in one process. Their kernels then share the GPU's SMs with no
// time-slicing between them (one context), so every block of every
// concurrently running kernel must be resident at once; every rank sees the
// same offers, so all agree.
func sharesGPUInProcess(offers []peermem.Offer) bool {
	type gpu struct {
		host    uint64
		pid     int64
		ordinal int32
	}
	seen := map[gpu]bool{}
	for _, o := range offers {
		k := gpu{o.HostHash, o.PID, o.Ordinal}
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// free releases what allocate and exchange made (current context set).
func (g *Backend) free() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	g.releaseSMs()
	keep(g.regs.Close()) // after the device's work: pending holds then count as done
	keep(g.links.Close())
	g.chain.Reset()
	keep(g.peers.Close())
	g.peers = nil
	for _, p := range []*uintptr{&g.buf, &g.ctrs} {
		if *p != 0 {
			keep(g.drv.MemFree(*p))
			*p = 0
		}
	}
	keep(g.ctl.Free(g.drv))
	if g.mod != 0 {
		keep(g.drv.ModuleUnload(g.mod))
		g.mod = 0
	}
	return first
}

// preload loads every kernel now, and makes room for their stacks, so
// that no later launch has to change the context: under CUDA's default
// lazy loading a kernel is loaded at its first launch (cuModuleGetFunction
// may return it partly loaded; cuFuncLoad finishes it), and a launch whose
// kernel needs more stack than the context reserved (the driver reserves
// local memory at the first launch that needs it) resizes that
// reservation; both can wait for the kernels running in the context:
// another rank's of this process, waiting for this one (a deadlock until
// the timeout, seen in the first operations of a fresh context with four
// ranks in one process). NCCL loads its kernels and sets the stack limit
// at init for the same reasons. An entry point the module lacks (a test's
// stand-ins) fails at its launch.
func (g *Backend) preload() error {
	g.fnMu.Lock()
	defer g.fnMu.Unlock()
	stack := 0
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
		if err := g.drv.FuncLoad(f); err != nil {
			return gccl.Errorf(gccl.Code(err), "kernels", "loading kernel %s: %w", name, err)
		}
		n, err := g.drv.FuncAttribute(cuda.FuncLocalSizeBytes, f)
		if err != nil {
			return gccl.Errorf(gccl.Code(err), "kernels", "kernel %s's stack size: %w", name, err)
		}
		stack = max(stack, n)
		g.fns[name] = &loadedFn{f: f, family: kernelFamily(name)}
	}
	if err := reserveStack(g.drv, stack); err != nil {
		return err
	}
	ro := maps.Clone(g.fns)
	g.fnsRO.Store(&ro)
	return nil
}
