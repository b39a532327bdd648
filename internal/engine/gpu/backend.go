package gpu

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/capture"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/gpu/regs"
	"github.com/gccl/gccl/internal/engine/internal/ctlblock"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/engine/internal/streamjoin"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/peermem"
	"github.com/gccl/gccl/transport/topo"
)

// Backend runs operations as kernels on the caller's CUstream. Nothing on
// the host waits for the GPU: the kernels synchronise among themselves
// through flags and counters in device memory that they advance, so a
// captured CUDA graph can be replayed any number of times. Its buffer
// layout, limits and grids are package gpuplan's (its constants and
// Settings), and gpuplan.Choose decides how each operation runs.
type Backend struct {
	rank, nranks int
	timeout      time.Duration // the kernels' waits (TimeoutNs)
	log          *slog.Logger

	dev *device.CUDADevice
	drv cuda.Driver
	mod cuda.Module

	buf  uintptr // this rank's communication buffer (set.BufBytes)
	ctrs uintptr // this rank's counters (local)
	// ctl is the host-mapped control block (package ctlblock): the abort
	// flag the host sets, the status word the kernels report failures to,
	// so no launch needs a copy back to learn it; it knows whether Close
	// began.
	ctl   ctlblock.Guard
	peers *peermem.Mapping
	// peerLink is the link to each rank, as both ranks of the pair agreed
	// at setup (links.go); the point-to-point grids read it. nil before.
	peerLink []topo.LinkKind
	base     kernels.DevComm // the fields every launch shares

	fnMu sync.Mutex
	fns  map[string]*loadedFn // loaded kernels, under fnMu
	// fnsRO is a copy of fns that launches read without locking; fn
	// replaces it (copy on write) when it loads a kernel.
	fnsRO atomic.Pointer[map[string]*loadedFn]
	// last is the path of the latest operation enqueued (LastPath).
	last atomic.Pointer[loadedFn]
	// args is reused by every launch; launches of one engine run one at a
	// time (under its ticket) and the driver copies the values at launch.
	args cuda.Args

	// set is what the kernels, grids and areas are chosen from (the
	// environment's, the same on every rank); its grid cap is lowered when
	// ranks share a GPU in one process (smshare.go).
	set gpuplan.Settings
	// sm is the share of this GPU's SMs this rank holds, nil if none.
	sm *smKey
	// checkDesc is GCCL_GPU_CHECK_DESCRIPTORS: a check kernel before the
	// kernels that compare no keys of their own (descriptor.go).
	checkDesc bool
	// testRegion, when nonzero, replaces the per-peer region size of the
	// P2P kernel (tests shrink it to cross many segment boundaries with
	// little data); set before launching, the same on every rank.
	testRegion int

	stats counters           // Stats (registered.go)
	regs  *regs.View         // the communicator's registrations (registered.go)
	chain streamjoin.Chain   // issue order across streams, under the launch's turn
	links *streamjoin.Events // the event chain and multi-stream launches link streams with
}

// flags, direct and bulk are rank r's areas as mapped here.
func (g *Backend) flags(r int) uintptr  { return g.peers.Ptrs[r] }
func (g *Backend) direct(r int) uintptr { return g.peers.Ptrs[r] + gpuplan.FlagsBytes }
func (g *Backend) bulk(r int) uintptr {
	return g.peers.Ptrs[r] + gpuplan.FlagsBytes + gpuplan.DirectBytes
}

// Submit enqueues the launch's kernels and copies on its stream, in its
// turn, and ends the launch before it returns (nothing on the host waits
// for the GPU).
func (g *Backend) Submit(l *engine.Launch) error {
	if !l.Ready() {
		if err := l.WaitTurn(context.Background()); err != nil {
			return err // the core gives the turn back on a failed Submit
		}
		// A kernel may have failed while the earlier launches ran; the
		// core checked the status word (AsyncError) just before an
		// immediate turn.
		if err := g.checkStatus(l); err != nil {
			return err
		}
	}
	if len(l.More) > 0 { // refused before anything is enqueued: the communicator stays usable
		if err := g.dev.Do(func() error { return streamjoin.Check(g.drv, cuda.Stream(l.Stream), l.More) }); err != nil {
			return err
		}
	}
	if err := g.dev.Do(func() error { return g.enqueue(l) }); err != nil {
		if !capture.Invalidated(err) { // else nothing of it will run: the communicator stays usable
			l.Fail(err)
		}
		return err
	}
	l.Done(nil)
	return nil
}

// Meets reports whether Submit of l agrees on graph registrations with
// the peers (l's stream is being captured with graph registration on).
func (g *Backend) Meets(l *engine.Launch) bool { return g.regs.Capturing(cuda.Stream(l.Stream)) }

// enqueue issues l's collectives in order, then its point-to-point ops, on
// l's stream, after the communicator's previous launch whatever its stream
// and after the work enqueued so far on l's other streams, which then wait
// for it (streamjoin.Chain; device context current, in l's turn).
func (g *Backend) enqueue(l *engine.Launch) error {
	return g.chain.Enqueue(g.drv, g.links, l, g.collective, g.sendRecv)
}

// checkStatus turns a failure a kernel reported into the engine's async error.
func (g *Backend) checkStatus(l *engine.Launch) error {
	err := g.Status()
	l.Fail(err)
	return err
}

// Status is the failure a kernel reported in the status word, or nil.
func (g *Backend) Status() error { return ctlblock.Err(g.ctl.Load()) }

// loadedFn is a loaded kernel and its family (kernelFamily), or with no
// function one of the paths that are not kernels (pathCopy, pathNone).
type loadedFn struct {
	f      cuda.Function
	family string
}

var pathCopy, pathNone = &loadedFn{family: PathCopy}, &loadedFn{family: PathNone}

// fn returns the kernel's function, loading it once; loaded kernels are
// found without taking a lock.
func (g *Backend) fn(name string) (*loadedFn, error) {
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

// LastPath is how the backend ran the latest operation enqueued: the
// kernel family (a kernel name of package kernels, such as
// kernels.AllReducePipelined), PathCopy or PathNone; "" before the first
// one. Traffic turns it into bytes.
func (g *Backend) LastPath() string {
	if lf := g.last.Load(); lf != nil {
		return lf.family
	}
	return ""
}

// launch starts kernel name with grid blocks on s: the Comm, then args.
// It reuses g.args, so it must run in the launch's turn.
func (g *Backend) launch(name string, grid int, s cuda.Stream, c *kernels.DevComm, args func(*cuda.Args)) error {
	lf, err := g.fn(name)
	if err != nil {
		return err
	}
	g.last.Store(lf)
	a := &g.args
	a.Reset()
	c.Put(a.Slot(kernels.DevCommBytes, kernels.DevCommAlign))
	if args != nil {
		args(a)
	}
	return g.drv.LaunchKernel(lf.f, cuda.Dim3{X: uint32(grid), Y: 1, Z: 1}, cuda.Dim3{X: kernels.Threads, Y: 1, Z: 1}, 0, s, a)
}

// Close waits for the device's work (the kernels' own deadlines bound it;
// with abort they are told to give up first), then frees the buffers.
// Safe twice.
func (g *Backend) Close(abort bool) error {
	stopped, err := g.ctl.Stop(abort, g.dev, g.drv)
	if !stopped {
		return nil
	}
	_ = g.dev.Do(func() error {
		err = errs.First(err, g.free())
		return nil
	})
	return err
}
