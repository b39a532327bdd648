package engine

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/transport"
)

// Bootstrap is what the engine needs from the communicator's bootstrap
// network (internal/bootstrap.Net, or MPI through mpiboot).
type Bootstrap interface {
	AllGather(ctx context.Context, b []byte) ([][]byte, error)
	Barrier(ctx context.Context) error
	Send(ctx context.Context, peer, tag int, b []byte) error
	Recv(ctx context.Context, peer, tag int) ([]byte, error)
	Close() error
	Abort() error
}

// Config describes one rank's engine. Rank, NRanks, Boot and Device are
// required; the rest have defaults.
type Config struct {
	Rank, NRanks int
	Boot         Bootstrap
	Device       device.Device
	Timeout      time.Duration // every wait; 0 = 5 minutes
	Log          *slog.Logger  // nil = slog.Default()

	// Transport configures the endpoint; Rank, CommID and Secret are filled
	// in by New when zero (CommID and Secret from rank 0, through the bootstrap).
	Transport transport.Config
	// Algo restricts the algorithms (GCCL_ALGO syntax: "ring,tree", "^direct"); "" = all.
	Algo string
	// ChunkBytes is the pipeline piece size (GCCL_CHUNKSIZE); 0 = algo.DefaultChunkBytes.
	ChunkBytes int
	// Backend runs the ops; nil = the host backend.
	Backend Backend
	// Reducer does the host backend's arithmetic; nil = DefaultReducer.
	Reducer Reducer
	// Comm is the communicator whose registrations (package bufreg) the
	// GPU backend uses; with it, captured operations register their
	// buffers for the graph's lifetime (GCCL_GRAPH_REGISTER). nil = none.
	Comm bufreg.Comm
}

// Engine is one rank's engine for one communicator.
type Engine struct {
	rank, nranks int
	boot         Bootstrap
	regComm      bufreg.Comm
	dev          device.Device
	timeout      time.Duration
	log          *slog.Logger
	backend      Backend
	red          Reducer
	allowed      algo.Allowed
	chunk        int

	ep    *transport.Endpoint
	infos []transport.PeerInfo
	link  []algo.Link // per peer

	ctx    context.Context // cancelled by Abort and Close
	cancel context.CancelFunc

	connMu sync.Mutex
	conns  []*peerConn // per peer, nil until connected

	order     ticketLock
	scratch   []byte    // grown on demand; used under the ticket lock only
	premulBuf []byte    // PreMulSum's scaled input (premulInput); as scratch
	zc        *zeroCopy // nil where the ranks cannot map each other's memory
	redops    redopTable
	asyncErr  atomic.Pointer[error]
	closed    atomic.Bool
}

// peerConn is the two directions to one peer.
type peerConn struct {
	send, recv transport.Conn
}

// New builds the engine: it opens the transport endpoint and exchanges the
// peers' addresses over the bootstrap. Connections are made on first use.
func New(cfg Config) (*Engine, error) {
	switch {
	case cfg.NRanks < 1:
		return nil, gccl.Errorf(gccl.InvalidArgument, "nranks", "nranks %d < 1", cfg.NRanks)
	case cfg.Rank < 0 || cfg.Rank >= cfg.NRanks:
		return nil, gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d out of range [0,%d)", cfg.Rank, cfg.NRanks)
	case cfg.Boot == nil:
		return nil, gccl.Errorf(gccl.InvalidArgument, "boot", "engine.Config.Boot is nil; pass the communicator's bootstrap")
	case cfg.Device == nil:
		return nil, gccl.Errorf(gccl.InvalidArgument, "device", "engine.Config.Device is nil; pass device.Open's result")
	}
	allowed, err := algo.ParseAllowed(cfg.Algo)
	if err != nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "GCCL_ALGO", "%v", err)
	}
	e := &Engine{rank: cfg.Rank, nranks: cfg.NRanks, boot: cfg.Boot, regComm: cfg.Comm, dev: cfg.Device, timeout: cfg.Timeout,
		log: cfg.Log, backend: cfg.Backend, allowed: allowed, chunk: cfg.ChunkBytes, redops: newRedopTable()}
	if e.timeout <= 0 {
		e.timeout = 5 * time.Minute
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.red = cfg.Reducer; e.red == nil {
		e.red = DefaultReducer
	}
	if e.backend == nil {
		e.backend = HostBackend{}
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.conns = make([]*peerConn, e.nranks)
	ctx, cancel := e.waitCtx(context.Background())
	defer cancel()
	if err := e.exchange(ctx, cfg.Transport); err != nil {
		e.Abort()
		return nil, err
	}
	if cfg.Backend == nil {
		if err := e.useGPU(ctx); err != nil {
			e.Abort()
			return nil, err
		}
	}
	if e.zc, err = e.setupZeroCopy(ctx); err != nil {
		e.Abort()
		return nil, err
	}
	return e, nil
}

// exchange agrees on the communicator id and secret, opens the endpoint and
// all-gathers every rank's PeerInfo.
func (e *Engine) exchange(ctx context.Context, tc transport.Config) error {
	tc.Rank = e.rank
	if tc.CommID == ([16]byte{}) {
		var mine [32]byte
		if _, err := rand.Read(mine[:]); err != nil {
			return gccl.Wrap(gccl.SystemError, "random", err)
		}
		all, err := e.boot.AllGather(ctx, mine[:])
		if err != nil {
			return gccl.Errorf(gccl.Code(err), "bootstrap", "agreeing on the communicator id: %w", err)
		}
		if len(all) != e.nranks || len(all[0]) != 32 {
			return gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d of 32 bytes", len(all), e.nranks)
		}
		copy(tc.CommID[:], all[0][:16])
		if tc.Secret == ([16]byte{}) {
			copy(tc.Secret[:], all[0][16:])
		}
	}
	ep, err := transport.Listen(tc)
	if err != nil {
		return err
	}
	e.ep = ep
	mine, err := ep.Info().MarshalBinary()
	if err != nil {
		return err
	}
	all, err := e.boot.AllGather(ctx, mine)
	if err != nil {
		return gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging transport addresses: %w", err)
	}
	if len(all) != e.nranks {
		return gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(all), e.nranks)
	}
	e.infos = make([]transport.PeerInfo, e.nranks)
	e.link = make([]algo.Link, e.nranks)
	for r, b := range all {
		if err := e.infos[r].UnmarshalBinary(b); err != nil {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d published a bad address: %w", r, err)
		}
		e.link[r] = algo.NetLink
		if ep.UsesShm(e.infos[r]) {
			e.link[r] = algo.SHMLink
		}
	}
	return nil
}

// Rank and NRanks describe the communicator.
func (e *Engine) Rank() int   { return e.rank }
func (e *Engine) NRanks() int { return e.nranks }

// Device is the engine's device.
func (e *Engine) Device() device.Device { return e.dev }

// waitCtx bounds a wait by the engine's timeout and by Abort.
func (e *Engine) waitCtx(parent context.Context) (context.Context, context.CancelFunc) {
	if e.ctx != nil && parent == context.Background() {
		// e.ctx is the only other bound: derive from it (no AfterFunc).
		return context.WithTimeout(e.ctx, e.timeout)
	}
	ctx, cancel := context.WithTimeout(parent, e.timeout)
	if e.ctx == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(e.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// AsyncError returns the first error of an operation that failed after
// being launched, or nil.
func (e *Engine) AsyncError() error {
	if p := e.asyncErr.Load(); p != nil {
		return *p
	}
	if r, ok := e.backend.(statusReporter); ok {
		return r.checkStatus(e) // a kernel that gave up left its stream done and its outputs unwritten
	}
	return nil
}

// statusReporter is a Backend whose work reports failures in memory (the
// GPU kernels' status word) rather than through Submit.
type statusReporter interface {
	checkStatus(e *Engine) error
}

func (e *Engine) setAsyncError(err error) {
	e.asyncErr.CompareAndSwap(nil, &err)
}

// Closed reports whether Close or Abort was called.
func (e *Engine) Closed() bool { return e.closed.Load() }

// Drain waits until every operation launched so far has finished (or ctx
// ends, or the engine is aborted) and returns the engine's async error.
// Finalize calls it before synchronising with the other ranks.
func (e *Engine) Drain(ctx context.Context) error {
	if e == nil {
		return nil
	}
	ctx, cancel := e.waitCtx(ctx)
	defer cancel()
	if err := e.order.drain(ctx); err != nil {
		return firstErr(e.AsyncError(), err)
	}
	return e.AsyncError()
}

// Close waits (up to the timeout) for launched operations to finish, then
// closes the connections. Safe on nil and twice.
func (e *Engine) Close() error {
	if e == nil || e.closed.Swap(true) {
		return nil
	}
	ctx, cancel := e.waitCtx(context.Background())
	err := e.order.drain(ctx)
	cancel()
	e.cancel()
	return firstErr(err, e.closeBackend(false), e.zc.close(false), e.ep.Close())
}

// Abort cancels everything in flight at once and closes the connections;
// operations still queued fail with gccl.ErrRemote. Safe on nil and twice.
func (e *Engine) Abort() error {
	return e.AbortWith(gccl.Errorf(gccl.RemoteError, "comm", "communicator aborted"))
}

// AbortWith is Abort with the reason that operations in flight and the
// async error report (a lost peer, say), unless an earlier failure is
// already recorded.
func (e *Engine) AbortWith(cause error) error {
	if e == nil {
		return nil
	}
	e.setAsyncError(cause)
	e.closed.Store(true)
	if e.cancel != nil {
		e.cancel()
	}
	return firstErr(e.closeBackend(true), e.zc.close(true), e.ep.Close())
}

// abortCause replaces the error of an operation cut short by Abort (a
// closed connection, a cancelled wait) with the reason for the abort.
func (e *Engine) abortCause(err error) error {
	if err == nil || e.ctx == nil || e.ctx.Err() == nil {
		return err
	}
	return firstErr(e.AsyncError(), err)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
