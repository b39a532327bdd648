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

// Net is one rank's view of a communicator's bootstrap network: a
// connection to and from every other rank. Its methods are safe for
// concurrent use, but collectives (AllGather, Barrier) must be called in the
// same order on every rank.
type Net struct {
	rank, nranks int
	key          wire.Key
	secret       wire.Secret
	timeout      time.Duration
	log          *slog.Logger
	ln           net.Listener
	out          []*outConn
	seq          atomic.Uint64 // internal collective counter

	mu      sync.Mutex
	in      []net.Conn
	box     map[boxKey][][]byte
	dead    []error               // why each peer is gone, nil while alive
	left    []bool                // the peer said goodbye (closed normally)
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

type outConn struct {
	mu sync.Mutex
	c  net.Conn
}

// Init joins the rendezvous of id as rank of nranks and connects to every
// other rank.
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
	addrs, err := rendezvousScalable(ctx, ids, nranks, rank, ln.Addr().String())
	if err == nil {
		err = n.connect(ctx, addrs)
	}
	if err != nil {
		_ = n.Abort()
		return nil, err
	}
	n.log.Info("bootstrap ready", "rank", rank, "nranks", nranks)
	return n, nil
}

func newNet(id wire.RootID, nranks, rank int, cfg Config) *Net {
	n := &Net{rank: rank, nranks: nranks, key: id.Key, secret: id.Secret, timeout: cfg.Timeout, log: cfg.Log,
		out: make([]*outConn, nranks), in: make([]net.Conn, nranks), dead: make([]error, nranks),
		left: make([]bool, nranks), lost: make(chan struct{}),
		box: map[boxKey][][]byte{}, changed: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	if n.timeout <= 0 {
		n.timeout = env.Get().Timeout
	}
	if n.log == nil {
		n.log = env.Logger("BOOTSTRAP")
	}
	return n
}

// Rank is this rank; Count the number of ranks.
func (n *Net) Rank() int  { return n.rank }
func (n *Net) Count() int { return n.nranks }

// connect dials every peer and waits until every peer has dialled us.
func (n *Net) connect(ctx context.Context, addrs [][]byte) error {
	var wg sync.WaitGroup
	errs := make([]error, n.nranks)
	for p := range n.nranks {
		if p != n.rank {
			wg.Go(func() { errs[p] = n.dial(ctx, p, string(addrs[p])) })
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return n.waitInbound(ctx)
}

func (n *Net) dial(ctx context.Context, p int, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ioErr(ctx, err, peerArg(p), "connecting to rank "+itoa(p)+" at "+addr)
	}
	stop := watch(ctx, c)
	h := wire.PeerHello{NRanks: uint32(n.nranks), From: uint32(n.rank), To: uint32(p)}
	err = dialAuth(c, n.key, n.secret)
	if err == nil {
		err = wire.WriteFrame(c, wire.TypePeerHello, h.Encode())
	}
	if err == nil {
		err = readStatus(c)
	}
	stop()
	if err != nil {
		_ = c.Close()
		return ioErr(ctx, err, peerArg(p), "handshake with rank "+itoa(p))
	}
	_ = c.SetDeadline(time.Time{})
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed != nil {
		_ = c.Close()
		return n.closed
	}
	n.out[p] = &outConn{c: c}
	return nil
}

// waitInbound waits until every peer's connection to us is authenticated.
func (n *Net) waitInbound(ctx context.Context) error {
	for {
		n.mu.Lock()
		var missing []int
		for p, c := range n.in {
			if c == nil && p != n.rank {
				missing = append(missing, p)
			}
		}
		ch, closed := n.changed, n.closed
		n.mu.Unlock()
		if closed != nil {
			return closed
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return gccl.Errorf(gccl.TimeoutError, "ranks", "ranks %v never connected to rank %d before the deadline", missing, n.rank)
		}
	}
}

func peerArg(p int) string { return "peer " + itoa(p) }
