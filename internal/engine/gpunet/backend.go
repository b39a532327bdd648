package gpunet

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/capture"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/ctlblock"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/engine/internal/streamjoin"
	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport"
)

// Backend runs every operation of a GPU communicator whose ranks span
// hosts as one ring-kernel launch on the caller's stream (docs/gpunet.md):
// the kernels talk to their ring neighbours through FIFOs, directly in the
// receiver's GPU memory between ranks of one host, else in pinned host
// memory whose slots the communicator's proxy goroutine moves over the
// network provider. Nothing on the host takes part in a launch,
// so operations can be captured in CUDA graphs and replayed.
type Backend struct {
	rank, nranks int
	timeout      time.Duration
	log          *slog.Logger

	dev *device.CUDADevice
	drv cuda.Driver
	mod cuda.Module
	ctl ctlblock.Guard

	slotBytes int
	nch       int              // channels of the ring (GCCL_NET_NCHANNELS, agreed at setup)
	p2pOff    bool             // GCCL_P2P_DISABLE (agreed at setup): no direct connections
	order     []int            // the ring: order[p] is the rank at position p (gpuplan.RingOrder)
	pos       []int            // pos[r] is rank r's ring position
	netEdges  int              // the ring's edges over the network (gpuplan.RingNetEdges)
	ranksDev  uintptr          // order in device memory (int32s), for the kernels
	ring      []ringCh         // per channel: to next, from prev
	fifos     []fifoMem        // every FIFO in pinned host memory, for free
	exports   []uintptr        // this rank's direct FIFO allocations (memalloc), for free
	imports   []func() error   // unmap the peers' direct FIFOs, for free
	boot      engine.Bootstrap // the setup of direct point-to-point connections

	ep    *transport.Endpoint
	infos []transport.PeerInfo
	px    *proxy.Proxy

	peerMu sync.Mutex
	peers  map[int]*peerConn // point-to-point connections made so far, by peer

	base  kernels.DevComm
	fns   map[string]cuda.Function // loaded kernels, under the launch's turn
	args  cuda.Args                // reused by every launch, under the turn
	chain streamjoin.Chain
	links *streamjoin.Events
	kick  func()                  // the proxy's Kick, which Submit calls
	hold  func() (release func()) // the proxy's Hold, taken per captured graph (graphHold)
	held  uint64                  // the capture whose graph holds the proxy last (graphHold), under the turn
	holds bool                    // held names a capture (capture IDs need not start above 0)

	last atomic.Pointer[string] // LastPath
}

// Submit enqueues the launch's kernels on its stream in its turn, kicks
// the proxy and ends the launch before it returns. A launch whose
// point-to-point ops name a peer this rank has not exchanged with yet
// first connects to it, which waits for that peer's Submit (Meets).
func (g *Backend) Submit(l *engine.Launch) error {
	if err := l.WaitTurn(context.Background()); err != nil {
		return err
	}
	if err := g.Status(); err != nil {
		l.Fail(err)
		return err
	}
	if len(l.More) > 0 {
		if err := g.dev.Do(func() error { return streamjoin.Check(g.drv, cuda.Stream(l.Stream), l.More) }); err != nil {
			return err
		}
	}
	if err := g.connectPeers(l.Context(), l.Ops); err != nil {
		l.Fail(err)
		return err
	}
	if err := g.dev.Do(func() error { return g.enqueue(l) }); err != nil {
		if !capture.Invalidated(err) { // else nothing of it will run: the communicator stays usable
			l.Fail(err)
		}
		return err
	}
	if g.kick != nil {
		g.kick()
	}
	l.Done(nil)
	return nil
}

// Meets reports whether Submit of l waits for peers: l has a Send or Recv
// with a peer not connected yet.
func (g *Backend) Meets(l *engine.Launch) bool { return len(g.newPeers(l.Ops)) > 0 }

// enqueue issues l's collectives in order, then its point-to-point ops,
// on l's stream, chained after the communicator's previous launch and
// joined with l's other streams (device context current, in l's turn).
func (g *Backend) enqueue(l *engine.Launch) error {
	if err := g.graphHold(cuda.Stream(l.Stream)); err != nil {
		return err
	}
	return g.chain.Enqueue(g.drv, g.links, l, g.collective, g.sendRecv)
}

// graphHold keeps the proxy polling hot for as long as the graph that s
// is being captured into exists (proxy.Hold, released by a user object
// the graph owns: cuda.RetainByGraph, which the executables instantiated
// from the graph keep alive too), since a replay has no Submit to kick
// it: an idle proxy finds a replay's slots only at its next poll (its
// sleeps grow to proxy.MaxSleep, about 150 µs with the kernel's timer
// slack). NCCL's proxy thread polls its persistent (graph) operations the
// same way. One hold per capture: a launch of the capture that took the
// last hold takes none (several captures interleaved on one communicator
// may take more than one each, all released with their graph). Nothing is
// done for an eager launch or a communicator with no proxy (device
// context current, in the turn).
func (g *Backend) graphHold(s cuda.Stream) error {
	if g.hold == nil {
		return nil
	}
	info, err := capture.Info(g.drv, gccl.Stream(s))
	if err != nil || !info.Active || g.holds && info.ID == g.held {
		return err
	}
	release := g.hold()
	if err := cuda.RetainByGraph(g.drv, info.Graph, release); err != nil {
		release()
		return gccl.Errorf(gccl.Code(err), "stream", "tying the network proxy's hold to the captured graph: %w", err)
	}
	g.held, g.holds = info.ID, true
	return nil
}

// Status is the failure a kernel or the proxy reported in the status
// word, or nil. A network failure is the proxy's error, which says which
// connection failed and how.
func (g *Backend) Status() error {
	st := g.ctl.Load()
	if st == kernels.StatusNetwork && g.px != nil {
		if err := g.px.Err(); err != nil {
			return gccl.Errorf(gccl.Code(err), "comm", "the network proxy failed, so this communicator's GPU kernels stopped: %w; check the peer's host and logs, then recreate the communicator", err)
		}
	}
	return ctlblock.Err(st)
}

// launch starts kernel name with grid blocks on s: the DevComm with the
// operation's key (a ring collective's, which its slots carry; 0 for the
// point-to-point kernel), then args (in the launch's turn: it reuses
// g.args).
func (g *Backend) launch(name string, grid int, key uint32, s cuda.Stream, args func(*cuda.Args)) error {
	f, ok := g.fns[name]
	if !ok {
		var err error
		if f, err = g.drv.ModuleGetFunction(g.mod, name); err != nil {
			return gccl.Errorf(gccl.Code(err), "kernels", "kernel %s: %w", name, err)
		}
		g.fns[name] = f
	}
	a := &g.args
	a.Reset()
	c := g.base
	c.Key = key
	c.Put(a.Slot(kernels.DevCommBytes, kernels.DevCommAlign))
	if args != nil {
		args(a)
	}
	return g.drv.LaunchKernel(f, cuda.Dim3{X: uint32(grid), Y: 1, Z: 1}, cuda.Dim3{X: kernels.Threads, Y: 1, Z: 1}, 0, s, a)
}

// Close waits for the device's work (the kernels' waits have deadlines;
// with abort they are told to give up first), ends the network
// connections, then frees the FIFOs and the module. Safe twice.
//
// Close is local: it never waits for a peer. An orderly Close (abort
// false) stops the proxy, which first sends what this rank's kernels
// posted, then closes the connections with their providers' bye, which a
// peer's proxy still serving takes as the end of an idle connection, not
// a failure (network.ErrPeerClosed); with abort, or when the sends do not
// finish in time, every connection ends at once (network.Abort), which
// peers see as a failure, as a death.
func (g *Backend) Close(abort bool) error {
	stopped, first := g.ctl.Stop(abort, g.dev, g.drv)
	if !stopped {
		return nil
	}
	if !abort {
		first = errs.First(first, g.leave())
	} else {
		first = errs.First(first, g.px.Abort(), g.ep.Abort())
	}
	_ = g.dev.Do(func() error {
		first = errs.First(first, g.free())
		return nil
	})
	return first
}

// Quiesce stops the proxy (engine.Quiescer) once Finalize drained the
// engine: it sends what this rank's kernels posted, then watches no
// connection, so that past Finalize's barrier no peer reports the Closes
// that follow. It waits for no peer's Quiesce.
func (g *Backend) Quiesce(ctx context.Context) error {
	if err := g.px.Stop(ctx); err != nil {
		return gccl.Errorf(gccl.Code(err), "comm", "rank %d: finalizing: %w", g.rank, err)
	}
	return nil
}

// leave ends the network connections in order, within the engine's
// timeout: it stops the proxy (sending what the kernels posted), then
// closes the connections; if the sends do not finish in time, it aborts
// them and says so.
func (g *Backend) leave() error {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	if err := g.px.Stop(ctx); err != nil {
		return errs.First(err, g.px.Abort(), g.ep.Abort())
	}
	return errs.First(g.px.Close(), g.ep.Close())
}

// Stats: the ring kernels stage nothing through communication buffers of
// the GPU (the FIFOs are the network's), so the counters stay zero.
func (g *Backend) Stats() engine.Stats { return engine.Stats{} }

// LastPath is the kernel of the latest operation enqueued (a kernel name
// of package kernels: kernels.RingAllReduce, kernels.NetP2P, ...), "copy"
// for a one-rank copy, "" before the first one.
func (g *Backend) LastPath() string {
	if p := g.last.Load(); p != nil {
		return *p
	}
	return ""
}

var (
	_ engine.Reporter = (*Backend)(nil)
	_ engine.Meeter   = (*Backend)(nil)
	_ engine.Quiescer = (*Backend)(nil)
)
