package proxy

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine/internal/ctlblock"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/network"
)

// Sleeps of an idle proxy: the first, doubled up to the last (the
// kernel's timer slack, about 50 µs on Linux, lengthens the short ones).
const (
	MinSleep = time.Microsecond
	MaxSleep = 100 * time.Microsecond
)

// A receiving connection on which nothing arrived for quietAfter is quiet:
// the hot passes test its receives on every quietEvery-th pass only (a
// test of a socket provider's receive is a read system call, which an
// idle connection's made on every pass, lengthening every pass of the
// connections in use: one channel of GCCL_NET_NCHANNELS carries a small
// operation); a pass after a sleep tests every connection.
const (
	quietAfter = int64(time.Millisecond)
	quietEvery = 8
)

// Config configures a Proxy. The zero value works: no status word, the
// environment's timeout and spin.
type Config struct {
	// Rank is this rank, for logs and errors.
	Rank int
	// Logger logs failures; nil = the NET subsystem's logger.
	Logger *slog.Logger
	// Status is the communicator's status word, which the kernels poll:
	// a failure stores kernels.StatusNetwork there if it still holds 0.
	// Production passes the host address of the host-mapped word; nil =
	// none.
	Status *uint32
	// Timeout is how long a connection with work to do (a sending FIFO
	// whose tail is past its head) may make no progress before the proxy
	// fails with gccl.ErrTimeout; 0 = GCCL_TIMEOUT (the engine's timeout).
	Timeout time.Duration
	// Spin is how long the proxy polls hot after a Kick or a transfer's
	// progress; 0 = GCCL_PROXY_SPIN (default 1ms), negative = never.
	Spin time.Duration
}

// Label names a connection in errors and logs: the peer rank at its other
// end and its channel.
type Label struct{ Peer, Channel int }

// String is "peer P channel C", how errors name the connection.
func (l Label) String() string {
	return "peer " + strconv.Itoa(l.Peer) + " channel " + strconv.Itoa(l.Channel)
}

// Proxy serves the FIFO connections of one rank (communicator) with one
// goroutine: it moves the slots the GPU posts in sending FIFOs over their
// network connections and writes what arrives into receiving FIFOs, as
// docs/gpunet.md says. Its methods are safe for concurrent use.
type Proxy struct {
	rank    int
	log     *slog.Logger
	status  *uint32
	timeout time.Duration
	spin    time.Duration
	epoch   time.Time

	mu     sync.Mutex
	added  []link // connections added and not yet taken by the goroutine
	closed bool
	more   atomic.Bool // added is not empty

	kicked   atomic.Int64  // time of the last Kick, ns since epoch
	holds    atomic.Int32  // Holds not released: the goroutine never sleeps while > 0
	sleeps   atomic.Int64  // idle sleeps so far (tests)
	bell     uint32        // bumped (atomically) by Kick, add and Close; the idle goroutine sleeps on it
	sleeping atomic.Bool   // the goroutine sleeps on bell: ringing it needs a wake-up
	wake     chan struct{} // cap 1: rung, for a goroutine asleep on a Go timer
	flush    chan struct{} // closed by Stop: end once every posted slot is sent
	quit     chan struct{} // closed (quitOnce) to end the goroutine at once
	quitOnce sync.Once
	stopOnce sync.Once
	done     chan struct{}
	err      atomic.Pointer[error]
	left     error // the goroutine's own: the first peer that closed its end in order (peerLeft)
	leftAt   int64 // when left was seen (ns since epoch)

	closeOnce sync.Once
	closeErr  error
	stats     []ConnStats   // set by Close
	closedAll chan struct{} // closed when Close's work is done

	// the goroutine's own
	sends []*sendConn
	recvs []*recvConn
}

// New starts a proxy with cfg (see Config); Close stops it.
func New(cfg Config) *Proxy {
	e := env.Get()
	p := &Proxy{
		rank: cfg.Rank, log: cfg.Logger, status: cfg.Status, timeout: cfg.Timeout, spin: cfg.Spin,
		epoch: time.Now(),
		wake:  make(chan struct{}, 1), flush: make(chan struct{}), quit: make(chan struct{}), done: make(chan struct{}),
		closedAll: make(chan struct{}),
	}
	if p.log == nil {
		p.log = env.Logger("NET")
	}
	if p.timeout <= 0 {
		p.timeout = e.Timeout
	}
	if p.spin == 0 {
		p.spin = e.ProxySpin
	}
	p.spin = max(p.spin, 0)
	p.kicked.Store(-int64(p.spin) - 1)
	go p.run()
	return p
}

// AddSend adds a sending FIFO and its connection: the proxy sends every
// slot the GPU posts in f over sc. It registers f's memory with sc once.
// From a nil error on the proxy owns sc: Close closes it; on an error the
// caller still does.
func (p *Proxy) AddSend(f FIFO, sc network.SendComm, l Label) error {
	if sc == nil {
		return gccl.Errorf(gccl.InvalidArgument, "sc", "nil SendComm for %v", l)
	}
	k, err := p.newLink(f, sc, l, "send")
	if err != nil {
		return err
	}
	ref, _ := sc.(network.Refuser)
	return p.add(&sendConn{conn: k, sc: sc, ref: ref})
}

// AddRecv adds a receiving FIFO and its connection: the proxy keeps up to
// NSlots receives posted into f's free slots and publishes what arrives.
// It registers f's memory with rc once, and tells a network.Poller that
// only Test will be called (the goroutine tests every receiving
// connection at least every quietEvery hot passes and after every
// sleep). Ownership of rc is as in AddSend.
func (p *Proxy) AddRecv(f FIFO, rc network.RecvComm, l Label) error {
	if rc == nil {
		return gccl.Errorf(gccl.InvalidArgument, "rc", "nil RecvComm for %v", l)
	}
	k, err := p.newLink(f, rc, l, "recv")
	if err != nil {
		return err
	}
	if pl, ok := rc.(network.Poller); ok {
		if err := pl.PollOnly(); err != nil { // the connection still works, woken per transfer
			p.log.Debug("network connection left in its default mode", "rank", p.rank, "conn", l.String(), "err", err)
		}
	}
	return p.add(&recvConn{conn: k, rc: rc})
}

// Kick says a launch was enqueued: the proxy polls hot for the spin time.
func (p *Proxy) Kick() {
	p.kicked.Store(int64(time.Since(p.epoch)))
	p.ring()
}

// Hold keeps the goroutine polling hot, as for ever after a Kick, until
// release is called: package gpunet holds the proxy for as long as a CUDA
// graph holding this communicator's launches exists, since a replay has
// no Submit to kick it (NCCL's proxy thread polls its persistent graph
// operations the same way). release is safe to call more than once (only
// the first counts) and after Close. Crowded, a held proxy still gives
// its P back as a hot one does (waiter.yield).
func (p *Proxy) Hold() (release func()) {
	p.holds.Add(1)
	p.ring()
	var once sync.Once
	return func() { once.Do(func() { p.holds.Add(-1) }) }
}

// hot reports whether the goroutine is to poll on at time now rather
// than sleep: sends are in flight (busy), it is held, or the spin time
// since the last Kick or progress has not passed.
func (p *Proxy) hot(now, progressed int64, busy bool) bool {
	return busy || p.holds.Load() > 0 || now-progressed <= int64(p.spin) || now-p.kicked.Load() <= int64(p.spin)
}

// ring wakes the goroutine if it sleeps, and makes a sleep it is about to
// begin return at once.
func (p *Proxy) ring() {
	atomic.AddUint32(&p.bell, 1)
	if p.sleeping.Load() {
		futex.WakeAll(&p.bell)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Err is the proxy's first failure, nil if none. After a failure the proxy
// serves no connection any more.
func (p *Proxy) Err() error {
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

// Stop ends the goroutine's service without closing any connection, for
// an orderly teardown: the goroutine first sends every slot the GPU
// posted and waits for those sends to complete (the peer's proxy, still
// serving, receives them), then ends. From then on the proxy watches no
// connection, so nothing a peer does to them is reported: Finalize stops
// every rank's proxy before its barrier, and Close stops it before it
// closes the connections. If ctx ends first, the goroutine ends at once and Stop returns
// a gccl.ErrTimeout naming the connections with slots left. Safe on nil,
// twice and after Close; a failure the goroutine met stays Err's.
func (p *Proxy) Stop(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.closed = true // adds no more
		p.mu.Unlock()
		close(p.flush)
		p.ring()
	})
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
	}
	p.quit1()
	<-p.done
	if left := p.unsent(); len(left) > 0 {
		return gccl.Errorf(gccl.TimeoutError, "proxy", "rank %d: stopping the network proxy: slots of %v were still unsent or unacknowledged at the deadline", p.rank, left)
	}
	return nil
}

// quit1 tells the goroutine to end at once.
func (p *Proxy) quit1() {
	p.quitOnce.Do(func() {
		close(p.quit)
		p.ring()
	})
}

// unsent is the sending connections with slots the GPU posted that are
// not all sent and acknowledged (the goroutine's lists: call it from the
// goroutine or once it ended).
func (p *Proxy) unsent() []Label {
	var left []Label
	for _, c := range p.sends {
		if c.done < c.f.Tail() {
			left = append(left, c.label)
		}
	}
	return left
}

// Close stops the goroutine, then closes every connection the proxy owns
// (which fails their pending requests: once Close returns, no provider
// writes into or reads from a FIFO any more, so the caller may free the
// memory) and deregisters the FIFOs. It is safe on nil and twice, and
// returns the first Close's (or Abort's) errors of closing and
// deregistering.
func (p *Proxy) Close() error { return p.shut(network.Comm.Close) }

// Abort is Close for an aborted communicator: every connection ends with
// network.Abort, at once, without waiting for its peer (which may be
// unreachable) to acknowledge.
func (p *Proxy) Abort() error { return p.shut(network.Abort) }

// shut is Close and Abort: end closes each connection.
func (p *Proxy) shut(end func(network.Comm) error) error {
	if p == nil {
		return nil
	}
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		links := p.added
		p.added = nil
		p.mu.Unlock()
		p.quit1()
		<-p.done
		for _, c := range p.sends {
			links = append(links, c)
			p.stats = append(p.stats, c.stats)
		}
		for _, c := range p.recvs {
			links = append(links, c)
			p.stats = append(p.stats, c.stats)
		}
		p.logStats()
		close(p.closedAll)
		var errs []error
		for _, c := range links {
			errs = append(errs, c.base().release(end))
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// Stats returns what each connection the goroutine served carried (see
// ConnStats), sending connections first, once Close has returned; nil
// before.
func (p *Proxy) Stats() []ConnStats {
	select {
	case <-p.closedAll:
		return p.stats
	default:
		return nil
	}
}

// logStats logs each connection's ConnStats at INFO: the network's rate
// while it carried the connection's slots and the share of slots that
// overlapped with it.
func (p *Proxy) logStats() {
	if !p.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	for _, s := range p.stats {
		if s.Slots == 0 {
			continue
		}
		args := []any{"rank", p.rank, "conn", s.Label.String(), "slots", s.Slots, "bytes", s.Bytes,
			"overlapped", strconv.FormatFloat(100*float64(s.Overlapped)/float64(s.Slots), 'f', 1, 64) + "%"}
		if s.Send {
			args = append(args, "wire", s.Wire)
			if s.Wire > 0 {
				args = append(args, "wireGBps", strconv.FormatFloat(float64(s.Bytes)/s.Wire.Seconds()/1e9, 'f', 3, 64))
			}
			p.log.Info("proxy send connection", args...)
		} else {
			p.log.Info("proxy receive connection", args...)
		}
	}
}

// add hands c to the goroutine, or releases its registration when the
// proxy is closed or failed.
func (p *Proxy) add(c link) error {
	p.mu.Lock()
	err := p.Err()
	if p.closed {
		err = gccl.Errorf(gccl.InvalidUsage, "proxy", "adding %v to a closed proxy", c.base().label)
	}
	if err == nil {
		p.added = append(p.added, c)
		p.more.Store(true)
	}
	p.mu.Unlock()
	if err != nil {
		_ = c.base().comm.Deregister(c.base().mh)
		return err
	}
	p.ring()
	return nil
}

// take moves the added connections into the goroutine's lists.
func (p *Proxy) take(now int64) {
	p.mu.Lock()
	added := p.added
	p.added = nil
	p.more.Store(false)
	p.mu.Unlock()
	for _, c := range added {
		switch c := c.(type) {
		case *sendConn:
			c.start(now)
			p.sends = append(p.sends, c)
		case *recvConn:
			c.start(now)
			p.recvs = append(p.recvs, c)
		}
	}
}

// run is the goroutine: serve every connection while it has work, is
// held or the spin time since the last Kick or progress has not passed,
// else sleep in growing steps (see waiter).
func (p *Proxy) run() {
	running.Add(1)
	defer close(p.done)
	defer running.Add(-1)
	w := newWaiter(p)
	sleep, progressed := MinSleep, int64(-int64(p.spin)-1)
	for hot := 0; ; hot++ { // hot: passes since the last sleep
		bell := atomic.LoadUint32(&p.bell) // a ring from now on cuts the sleep short
		now := int64(time.Since(p.epoch))
		if p.more.Load() {
			p.take(now)
		}
		busy, moved, err := p.serve(now, hot%quietEvery == 0)
		if err == nil {
			err = p.kernelFailure()
		}
		if err != nil {
			p.fail(err)
			return
		}
		if moved {
			progressed = now
		}
		select {
		case <-p.quit:
			return
		case <-p.flush:
			if len(p.unsent()) == 0 {
				return
			}
		default:
		}
		w.check(now)
		if p.hot(now, progressed, busy) {
			sleep = MinSleep
			if !moved {
				w.yield()
			}
			continue
		}
		p.sleeps.Add(1)
		w.sleep(bell, sleep)
		hot = -1
		if atomic.LoadUint32(&p.bell) != bell {
			sleep = MinSleep
		} else {
			sleep = min(2*sleep, MaxSleep)
		}
	}
}

// clock is the time in ns since p.epoch.
func (p *Proxy) clock() int64 { return int64(time.Since(p.epoch)) }

// serve runs one pass over the connections: busy when a send is in
// flight, moved when anything was posted or completed. all: test the
// receives of quiet receiving connections too (see quietAfter).
func (p *Proxy) serve(now int64, all bool) (busy, moved bool, err error) {
	for _, c := range p.sends {
		b, m, err := c.step(now, int64(p.timeout), p.clock)
		if err != nil {
			return false, false, err
		}
		busy, moved = busy || b, moved || m
	}
	for _, c := range p.recvs {
		if c.left {
			continue
		}
		m, err := c.step(now, all || !c.quiet(now))
		if errors.Is(err, network.ErrPeerClosed) {
			p.peerLeft(c, err, now)
			continue
		}
		if err != nil {
			return false, false, err
		}
		moved = moved || m
	}
	if p.left != nil && p.kicked.Load() > p.leftAt {
		return false, false, gccl.Errorf(gccl.RemoteError, "proxy", "rank %d: an operation was launched after %w", p.rank, p.left)
	}
	return busy, moved, nil
}

// peerLeft ends receiving connection c, whose peer closed its end in
// order (network.ErrPeerClosed: it sent all it meant to, then closed its
// communicator; a rank that died or aborted says no bye), without a
// failure: peers close their communicators one after the other, and none
// is to report another's Close. A use of the connection still fails: a
// launch kicked from now on (the communicator can only be closed), and a
// slot posted towards the peer (the provider's Isend fails). A kernel
// already waiting for more from the peer waits for what the peer never
// sent: the kernels' timeout ends it, as any mismatch.
func (p *Proxy) peerLeft(c *recvConn, err error, now int64) {
	c.left = true
	if p.left == nil {
		p.left, p.leftAt = c.errorf(gccl.RemoteError, "peer rank %d closed its communicator: %w", c.label.Peer, network.ErrPeerClosed), now
	}
	p.log.Debug("network peer closed its connection in order", "rank", p.rank, "conn", c.label.String(), "err", err)
}

// kernelFailure is the failure this rank's kernels reported in the status
// word (any but the proxy's own StatusNetwork), or nil. The proxy then
// stops and tells its peers (fail): the ranks of the ring that wait for
// what this rank's kernel will never send (it stopped: the ranks launched
// different operations, a wait timed out, the launch was aborted) fail at
// once instead of at their deadline, as for a network failure.
func (p *Proxy) kernelFailure() error {
	if p.status == nil {
		return nil
	}
	st := atomic.LoadUint32(p.status)
	if st == kernels.StatusOK || st == kernels.StatusNetwork {
		return nil
	}
	err := ctlblock.Err(st)
	return gccl.Errorf(gccl.Code(err), "proxy", "rank %d's GPU kernel stopped: %w", p.rank, err)
}

// fail records err, stores StatusNetwork in the status word if it holds
// 0, and tells the peers of every connection, the senders of the
// receiving ones and the receivers of the sending ones (network.Failer;
// a sending connection whose provider has none is aborted), so that
// their proxies stop too instead of waiting for a deadline. Both
// directions matter: on a ring whose ranks of one host are joined by
// direct edges (no proxy), the failure reaches a rank past such an edge
// only through its own network connection, whichever way it points.
func (p *Proxy) fail(err error) {
	p.err.CompareAndSwap(nil, &err)
	if p.status != nil {
		atomic.CompareAndSwapUint32(p.status, kernels.StatusOK, kernels.StatusNetwork)
	}
	p.log.Warn("network proxy stopped: "+err.Error(), "rank", p.rank)
	for _, c := range p.recvs {
		if f, ok := c.rc.(network.Failer); ok {
			f.Fail(err)
		}
	}
	for _, c := range p.sends {
		if f, ok := c.sc.(network.Failer); ok {
			f.Fail(err)
		} else {
			_ = network.Abort(c.sc)
		}
	}
}
