package host

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/engine/host/zerocopy"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/internal/hoststream"
	"github.com/gccl/gccl/transport"
	"github.com/gccl/gccl/transport/topo"
)

// Config tunes the host backend; the zero value is the defaults but for
// Algos.
type Config struct {
	// Transport configures the endpoint; Rank, CommID and Secret are filled
	// in by Open when zero (CommID and Secret from rank 0, through the bootstrap).
	Transport transport.Config
	// Algos are the algorithms allowed (GCCL_ALGO, as env.Settings.Algos
	// parses it; algo.AllAlgorithms for all). Collectives that none of
	// them runs take ring, so the zero set means ring only.
	Algos algo.Allowed
	// ChunkBytes is the pipeline piece size (GCCL_CHUNKSIZE); 0 = algo.DefaultChunkBytes.
	// It must be the same on every rank.
	ChunkBytes int
	// Channels is the most channels of a collective when the ranks span
	// hosts (channels.go), 1 to algo.MaxChannels; 0 = GCCL_NET_NCHANNELS,
	// else DefaultChannels. It must be the same on every rank.
	Channels int
	// Reducer does the arithmetic; nil = DefaultReducer.
	Reducer Reducer
}

// Backend runs operations on host streams over the transports: one task
// per launch (or per group of launches sharing a stream, task.go) that
// runs the plans of package algo with a runner (package runner), or the zero-copy schedule
// when every rank is on this host.
type Backend struct {
	rank, nranks int
	dev          device.Device
	log          *slog.Logger
	red          Reducer
	allowed      algo.Allowed
	chunk        int // Config.ChunkBytes, agreed
	nch          int // most channels of a collective: Config.Channels where the ranks span hosts, else 1

	boot    engine.Bootstrap // the stall reports (stall.go)
	timeout time.Duration

	ep    *transport.Endpoint
	infos []transport.PeerInfo
	link  []algo.Link // per peer

	connMu sync.Mutex
	conns  [][]*peerConn // per channel, per peer; nil until connected

	// Operation numbers the message descriptors carry (package opdesc); used under
	// the engine's issue order only, each p2p lane touching its own.
	collSeq          uint32   // collectives run
	sendSeq, recvSeq []uint32 // per peer: Sends to it, Recvs from it

	p2p       p2pRun         // runSendRecv's lanes; used under the engine's issue order only
	chans     []channel      // per channel: what its collectives keep; as p2p
	coll      begun          // the collective startCollective began; as p2p
	sizes     []int          // messages' sizes (fits); as p2p
	premulBuf []byte         // PreMulSum's scaled input (premulInput); as p2p
	zc        *zerocopy.Path // nil where the ranks cannot map each other's memory
	tasks     sync.Pool      // *task, reused by Submit
	// held is the stream holding the backend's launch that Start began,
	// for a Synchronize to finish (task.go); nil when none.
	held atomic.Pointer[hoststream.Stream]
}

// peerConn is the two directions to one peer on one channel: a
// runner.Peer.
type peerConn struct {
	peer       int
	send, recv transport.Conn
	lastHeard  // the last operation a message came from (stall.go)
}

// Conns returns the connections to send to the peer and to receive from it.
func (c *peerConn) Conns() (send, recv transport.Conn) { return c.send, c.recv }

// New returns the constructor of a host backend with cfg, for engine.Config.
func New(cfg Config) engine.NewBackend {
	return func(ctx context.Context, s engine.Setup) (engine.Backend, error) { return Open(ctx, s, cfg) }
}

// Open builds the backend (collective over the ranks): it opens the
// transport endpoint, exchanges the peers' addresses over the bootstrap
// and opens the zero-copy path (package zerocopy) when every peer is on
// this host.
// Connections are made on first use.
func Open(ctx context.Context, s engine.Setup, cfg Config) (*Backend, error) {
	set, err := resolveSettings(cfg)
	if err != nil {
		return nil, err
	}
	b := &Backend{rank: s.Rank, nranks: s.NRanks, dev: s.Device, log: s.Log, red: cfg.Reducer,
		allowed: cfg.Algos, chunk: set.chunk, boot: s.Boot, timeout: s.Timeout,
		sendSeq: make([]uint32, s.NRanks), recvSeq: make([]uint32, s.NRanks)}
	if b.red == nil {
		b.red = DefaultReducer
	}
	b.tasks.New = func() any { return &task{} }
	if err := b.exchange(ctx, s.Boot, cfg.Transport, set); err != nil {
		return nil, errs.First(err, b.Close(true))
	}
	b.nch = 1
	if !b.oneHost() {
		b.nch = set.channels
	}
	b.conns, b.chans = make([][]*peerConn, b.nch), make([]channel, b.nch)
	for c := range b.conns {
		b.conns[c] = make([]*peerConn, b.nranks)
	}
	futex.ShareCPUs(b.localRanks())
	if b.zc, err = zerocopy.Open(ctx, s, b.allLocal()); err != nil {
		return nil, errs.First(err, b.Close(true))
	}
	return b, nil
}

// exchange opens the endpoint (tc's CommID and Secret, the same on every
// rank, come from the caller: comm derives them from the unique ID) and
// all-gathers every rank's settings and PeerInfo; ranks whose settings
// differ fail (settings.agree).
func (b *Backend) exchange(ctx context.Context, boot engine.Bootstrap, tc transport.Config, set settings) error {
	tc.Rank = b.rank
	ep, err := transport.Listen(tc)
	if err != nil {
		return err
	}
	b.ep = ep
	info, err := ep.Info().MarshalBinary()
	if err != nil {
		return err
	}
	all, err := boot.AllGather(ctx, append(set.marshal(), info...))
	if err != nil {
		return gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging transport addresses: %w", err)
	}
	if len(all) != b.nranks {
		return gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(all), b.nranks)
	}
	b.infos = make([]transport.PeerInfo, b.nranks)
	b.link = make([]algo.Link, b.nranks)
	for r, p := range all {
		if p, err = set.agree(b.rank, r, p); err != nil {
			return err
		}
		if err := b.infos[r].UnmarshalBinary(p); err != nil {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d published a bad address: %w", r, err)
		}
		b.link[r] = algo.NetLink
		if ep.UsesShm(b.infos[r]) {
			b.link[r] = algo.SHMLink
		}
	}
	return nil
}

// oneHost reports whether every rank runs on this host.
func (b *Backend) oneHost() bool { return b.localRanks() == b.nranks }

// allLocal reports whether every peer is reached through shared memory.
func (b *Backend) allLocal() bool {
	for r, l := range b.link {
		if r != b.rank && l != algo.SHMLink {
			return false
		}
	}
	return true
}

// localRanks is how many ranks, this one included, run on this host
// (whatever transport connects them).
func (b *Backend) localRanks() int {
	n := 0
	for _, p := range b.infos {
		if topo.SameHost(p.HostHash, b.infos[b.rank].HostHash) {
			n++
		}
	}
	return n
}

// Close frees the zero-copy control block and closes the connections.
// With abort it first marks this rank failed, so peers waiting for it at
// a zero-copy barrier fail at once. Safe twice.
func (b *Backend) Close(abort bool) error {
	err := b.zc.Close(abort)
	switch {
	case b.ep != nil && abort:
		err = errs.First(err, b.ep.Abort())
	case b.ep != nil:
		err = errs.First(err, b.ep.Close())
	}
	return err
}

// connected reports whether every peer but this rank has a connection on
// channels [0, nch) (b.connMu held).
func (b *Backend) connected(peers []int, nch int) bool {
	for _, conns := range b.conns[:nch] {
		for _, p := range peers {
			if p != b.rank && conns[p] == nil {
				return false
			}
		}
	}
	return true
}

// connect makes the missing connections to peers on channels [0, nch),
// all at once: each Connect waits for the peer's matching call, so
// connecting one by one could wait in a cycle.
//
// A connection that times out is an opdesc.WaitError of op() (the peer has
// not started an operation with this rank). When every peer is connected
// (every launch after the first few) it allocates nothing.
func (b *Backend) connect(ctx context.Context, op func() string, peers []int, nch int) error {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	if b.connected(peers, nch) {
		return nil
	}
	var wg sync.WaitGroup
	errList := make([]error, nch*len(peers))
	made := make([][]*peerConn, nch)
	for c := range made {
		made[c] = make([]*peerConn, b.nranks)
		for i, p := range peers {
			if b.conns[c][p] != nil || made[c][p] != nil || p == b.rank {
				continue
			}
			pc := &peerConn{peer: p}
			made[c][p] = pc
			wg.Go(func() {
				s, r, err := b.ep.Connect(ctx, b.infos[p], c)
				pc.send, pc.recv, errList[c*len(peers)+i] = s, r, errs.WrapPeer(err, p, "connecting to")
			})
		}
	}
	wg.Wait()
	for c := range made {
		for p, pc := range made[c] {
			if pc != nil && pc.send != nil {
				b.conns[c][p] = pc
			}
		}
	}
	for i, err := range errList {
		if gccl.Code(err) == gccl.TimeoutError { // op is formatted only here, so it stays on the caller's stack
			errList[i] = opdesc.Waiting(op(), peers[i%len(peers)], "it never connected: it has not started an operation with this rank", err)
		}
	}
	if w := opdesc.Merge(errList...); w != nil {
		return w
	}
	return errs.First(errList...)
}

// allConns is every connection made, of every channel.
func (b *Backend) allConns() []*peerConn {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	var all []*peerConn
	for _, conns := range b.conns {
		for _, c := range conns {
			if c != nil {
				all = append(all, c)
			}
		}
	}
	return all
}
