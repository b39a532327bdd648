package comm

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/auth"
	"github.com/gccl/gccl/internal/bootstrap"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/choose"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/progress"
	"github.com/gccl/gccl/internal/regcache"
	"github.com/gccl/gccl/internal/wire"
	"github.com/gccl/gccl/transport"
)

// Lifecycle states of a Comm.
const (
	stateOpen int32 = iota
	stateFinalized
	stateClosed
)

// Comm is one rank of a communicator.
type Comm struct {
	nranks, rank int
	cfg          Config
	log          *slog.Logger

	ready   chan struct{} // closed when initialisation has finished
	initErr error         // written before ready is closed
	cancel  context.CancelFunc

	boot    *bootstrap.Net
	dev     device.Device
	ownsDev bool            // dev was opened here (not Config.UseDevice): Close and Abort close it
	regs    *regcache.Cache // the communicator's buffer registrations (package bufreg)
	eng     *engine.Engine

	state                atomic.Int32
	lost                 atomic.Pointer[error] // a peer died (see liveness.go)
	watchStop, watchDone chan struct{}
	splitSeq             atomic.Int64
	sibs                 *siblings // nil unless one call made several ranks here; set before it returns
	closeMu              sync.Mutex
}

// InitRank creates rank of an nranks-rank communicator from id. Every rank
// must call it (or InitRankConfig) with the same id and nranks; it returns
// when all have joined.
func InitRank(nranks int, id UniqueID, rank int) (*Comm, error) {
	return InitRankConfig(nranks, id, rank, nil)
}

// InitRankConfig is InitRank with a configuration. With cfg.Blocking false
// it returns at once; Status then reports gccl.ErrInProgress until the
// communicator is ready.
func InitRankConfig(nranks int, id UniqueID, rank int, cfg *Config) (*Comm, error) {
	return initRanks(nranks, []UniqueID{id}, rank, cfg)
}

// InitRankScalable creates rank of an nranks-rank communicator from several
// unique IDs (made by different processes, every rank passing the same list):
// the ranks are cut into len(ids) contiguous slices, each meeting at the
// root of its ID, so no single root serves every rank. 1 <= len(ids) <= nranks.
func InitRankScalable(nranks, rank int, ids []UniqueID, cfg *Config) (*Comm, error) {
	if len(ids) < 1 || len(ids) > max(nranks, 1) {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ids", "%d unique IDs for %d ranks; pass between 1 and nranks", len(ids), nranks)
	}
	return initRanks(nranks, ids, rank, cfg)
}

func initRanks(nranks int, ids []UniqueID, rank int, cfg *Config) (*Comm, error) {
	if nranks < 1 || nranks > wire.MaxRanks {
		return nil, gccl.Errorf(gccl.InvalidArgument, "nranks", "%d ranks; pass between 1 and %d", nranks, wire.MaxRanks)
	}
	if rank < 0 || rank >= nranks {
		return nil, gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d is out of range [0, %d)", rank, nranks)
	}
	roots := make([]wire.RootID, len(ids))
	for i, id := range ids {
		r, err := id.root()
		if err != nil {
			return nil, err
		}
		roots[i] = r
	}
	c, err := newComm(nranks, rank, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	c.cancel = cancel
	if !*c.cfg.Blocking {
		go c.init(ctx, roots)
		return c, nil
	}
	leave := progress.Enter(true)
	c.init(ctx, roots)
	leave()
	if c.initErr != nil {
		return nil, c.initErr
	}
	return c, nil
}

func newComm(nranks, rank int, cfg *Config) (*Comm, error) {
	rc, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	c := &Comm{nranks: nranks, rank: rank, cfg: rc, ready: make(chan struct{})}
	c.log = env.Logger("INIT").With("comm", rc.Name, "rank", rank, "nranks", nranks)
	return c, nil
}

// init connects the bootstrap, opens the device and builds the engine.
func (c *Comm) init(ctx context.Context, roots []wire.RootID) {
	defer close(c.ready)
	defer c.cancel()
	err := c.build(ctx, roots)
	if err != nil {
		_ = c.eng.Abort()
		_ = c.closeRegs()
		_ = c.boot.Abort()
		_ = c.closeDevice()
		c.eng, c.boot, c.dev = nil, nil, nil
		c.log.Warn("communicator init failed", "err", err)
	} else {
		c.startWatch()
		c.log.Info("communicator ready", "device", c.dev.Kind(), "ordinal", c.dev.Ordinal())
	}
	c.initErr = err
}

func (c *Comm) build(ctx context.Context, roots []wire.RootID) error {
	bcfg := bootstrap.Config{Timeout: c.cfg.Timeout, Log: env.Logger("BOOTSTRAP")}
	boot, err := bootstrap.InitScalable(ctx, roots, c.nranks, c.rank, bcfg)
	if err != nil {
		return err
	}
	c.boot = boot
	if c.dev = c.cfg.UseDevice; c.dev == nil {
		if c.dev, err = device.Open(c.cfg.Backend, c.cfg.Device); err != nil {
			return err
		}
		c.ownsDev = true
	}
	c.regs = regcache.New(regcache.Owner{Device: c.dev, Rank: c.rank, NRanks: c.nranks, Net: boot})
	s := env.Get()
	c.eng, err = engine.New(engine.Config{Rank: c.rank, NRanks: c.nranks, Boot: boot, Device: c.dev, ID: engineID(roots),
		Timeout: c.cfg.Timeout, Log: env.Logger("COLL"), Backend: choose.Backend(choose.Config{Regs: c.regs, Algos: s.Algos, ChunkBytes: s.ChunkSize, Transport: transportIdentity(roots[0])})})
	return err
}

// transportIdentity is the transport endpoint's CommID and Secret, derived
// from the communicator's first unique ID without a message: every rank
// holds that ID's key and secret (the bootstrap's mesh admits only peers
// that prove them), so every rank derives the same pair. The secret is keyed
// by the ID's secret, so only its holders can predict it, and neither it
// nor the ID's secret ever crosses the wire; the CommID is bound to the ID's
// key, fresh for every communicator (an ID creates one; Split makes new ones).
func transportIdentity(id wire.RootID) transport.Config {
	return transport.Config{CommID: auth.Derive(id.Secret[:], "transport comm id", id.Key[:]),
		Secret: auth.Derive(id.Secret[:], "transport secret", id.Key[:])}
}

// engineID is the communicator's identity for its engine (engine.Config.ID):
// a hash of the rendezvous keys of its unique IDs, which every rank passed
// alike, random for every ID and never zero. Groups order their launches
// by it.
func engineID(roots []wire.RootID) uint64 {
	h := fnv.New64a()
	for _, r := range roots {
		h.Write(r.Key[:])
	}
	return max(h.Sum64(), 1)
}

// Status reports the communicator's state: nil when ready,
// gccl.ErrInProgress while a nonblocking init runs, the failure if it
// failed, gccl.ErrInvalidUsage after Close or Abort.
func (c *Comm) Status() error {
	if err := c.usable(); err != nil {
		return err
	}
	select {
	case <-c.ready:
		return c.initErr
	default:
		return gccl.Errorf(gccl.InProgress, "comm", "initialisation is still in progress; poll Status until it is not")
	}
}

// usable fails on a nil or closed communicator.
func (c *Comm) usable() error {
	if c == nil {
		return gccl.Errorf(gccl.InvalidArgument, "comm", "nil communicator")
	}
	if c.state.Load() == stateClosed {
		return gccl.Errorf(gccl.InvalidUsage, "comm", "communicator %q (rank %d) is closed; create a new one", c.cfg.Name, c.rank)
	}
	return nil
}

// open fails unless the communicator is ready and neither finalized nor closed.
func (c *Comm) open() error {
	if err := c.Status(); err != nil {
		return err
	}
	if c.state.Load() != stateOpen {
		return gccl.Errorf(gccl.InvalidUsage, "comm", "communicator %q (rank %d) was finalized; only Close is allowed", c.cfg.Name, c.rank)
	}
	return nil
}

// Count is the number of ranks; 0 on a nil communicator.
func (c *Comm) Count() int {
	if c == nil {
		return 0
	}
	return c.nranks
}

// Rank is this rank's index in [0, Count()); -1 on a nil communicator.
func (c *Comm) Rank() int {
	if c == nil {
		return -1
	}
	return c.rank
}

// Device is the device this rank runs on; nil until the communicator is
// ready. Unless it came from Config.UseDevice, the communicator opened it
// and closes it in Close and Abort (with the memory and streams it made).
func (c *Comm) Device() device.Device {
	if c.Status() != nil {
		return nil
	}
	return c.dev
}

// Config returns the resolved configuration; the zero Config on a nil
// communicator.
func (c *Comm) Config() Config {
	if c == nil {
		return Config{}
	}
	return c.cfg
}
