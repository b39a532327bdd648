package bootstrap

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/wire"
)

// MaxMessage is the largest payload of one Send or AllGather contribution.
const MaxMessage = wire.MaxPayload - 64

// Config tunes a Net. The zero value uses GCCL_TIMEOUT and the BOOTSTRAP logger.
type Config struct {
	Timeout time.Duration // deadline of waits whose context has none
	Log     *slog.Logger
}

// Net is one rank's view of a communicator's bootstrap network. At init it
// holds a connection to each of its ring neighbours; other connections are
// made on first use (see the package documentation). Its methods are safe
// for concurrent use, but collectives (AllGather, Barrier) must be called
// in the same order on every rank.
type Net struct {
	rank, nranks int
	key          wire.Key
	secret       wire.Secret
	timeout      time.Duration
	log          *slog.Logger
	ln           net.Listener
	addrs        [][]byte           // every rank's listen address
	seq          atomic.Uint64      // internal collective counter
	stop         context.Context    // done once the network is closed: ends background dials
	halt         context.CancelFunc // ends stop

	mu      sync.Mutex
	links   map[int]*link // the peers this rank is connected to, or dialling
	box     map[boxKey][][]byte
	dead    map[int]error         // why a peer is unreachable
	left    map[int]bool          // the peer said goodbye (closed normally)
	quit    map[int]error         // why the peer's Init failed, as it said before aborting
	heard   map[int]bool          // the peer's loss is known here and was passed on
	lost    chan struct{}         // closed on the first peer lost without a goodbye
	lostErr error                 // that loss
	changed chan struct{}         // closed and replaced whenever mailbox state changes
	closed  error                 // set by Close/Abort
	pending map[net.Conn]struct{} // accepted, not yet authenticated
	wg      sync.WaitGroup
}

type boxKey struct {
	peer     int
	internal bool
	tag      uint64
}

// Init joins the rendezvous of id as rank of nranks and connects to its
// ring neighbours.
func Init(ctx context.Context, id wire.RootID, nranks, rank int, cfg Config) (*Net, error) {
	return initNet(ctx, []wire.RootID{id}, nranks, rank, cfg)
}

// InitScalable is Init with several root IDs, each handling a contiguous
// slice of the ranks (see the package documentation). len(ids) must be in
// [1, nranks] and every rank must pass the same ids in the same order.
func InitScalable(ctx context.Context, ids []wire.RootID, nranks, rank int, cfg Config) (*Net, error) {
	if len(ids) < 1 || len(ids) > nranks {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ids", "%d unique IDs for %d ranks; pass between 1 and nranks", len(ids), nranks)
	}
	return initNet(ctx, ids, nranks, rank, cfg)
}

func initNet(ctx context.Context, ids []wire.RootID, nranks, rank int, cfg Config) (*Net, error) {
	if nranks < 1 || nranks > wire.MaxRanks {
		return nil, gccl.Errorf(gccl.InvalidArgument, "nranks", "%d ranks; pass between 1 and %d", nranks, wire.MaxRanks)
	}
	if rank < 0 || rank >= nranks {
		return nil, gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d is out of range [0, %d)", rank, nranks)
	}
	n := newNet(ids[0], nranks, rank, cfg)
	ctx, cancel := withDeadline(ctx, n.timeout)
	defer cancel()
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	n.ln = ln
	n.wg.Go(func() { serve(ln, "rank "+itoa(rank), n.wg.Go, n.handshake) })
	n.addrs, err = rendezvousScalable(ctx, ids, nranks, rank, ln.Addr().String())
	if err == nil {
		err = n.connectRing(ctx)
	}
	if err != nil {
		n.sayWhy(err)
		_ = n.Abort()
		return nil, err
	}
	n.log.Info("bootstrap ready", "rank", rank, "nranks", nranks)
	return n, nil
}

func newNet(id wire.RootID, nranks, rank int, cfg Config) *Net {
	n := &Net{rank: rank, nranks: nranks, key: id.Key, secret: id.Secret, timeout: cfg.Timeout, log: cfg.Log,
		links: map[int]*link{}, dead: map[int]error{}, left: map[int]bool{}, quit: map[int]error{}, heard: map[int]bool{}, lost: make(chan struct{}),
		box: map[boxKey][][]byte{}, changed: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	if n.timeout <= 0 {
		n.timeout = env.Get().Timeout
	}
	n.stop, n.halt = context.WithCancel(context.Background())
	if n.log == nil {
		n.log = env.Logger("BOOTSTRAP")
	}
	return n
}

// Rank is this rank; Count the number of ranks.
func (n *Net) Rank() int  { return n.rank }
func (n *Net) Count() int { return n.nranks }

// connectRing connects this rank to its ring neighbours: it dials the next
// rank and waits for the previous one's connection (with two ranks, rank 0
// dials). The ring is what carries a lost peer's news (see liveness.go).
func (n *Net) connectRing(ctx context.Context) error {
	if n.nranks == 1 {
		return nil
	}
	next, prev := n.ring()
	if n.nranks > 2 || n.rank == 0 {
		if _, err := n.connect(ctx, next, true, true); err != nil {
			return err
		}
	}
	_, err := n.connect(ctx, prev, false, true)
	return err
}

// ring returns this rank's neighbours on the ring.
func (n *Net) ring() (next, prev int) {
	return (n.rank + 1) % n.nranks, (n.rank + n.nranks - 1) % n.nranks
}
