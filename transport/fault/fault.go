package fault

import (
	"context"
	"math/rand/v2"
	gonet "net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport"
)

// Config sets the seed and the probability (0..1) of each fault per call.
type Config struct {
	Seed     uint64
	Drop     float64       // a Send (or a net write) is silently discarded
	Delay    float64       // a call is delayed by up to MaxDelay
	Corrupt  float64       // one bit of a Send, a received piece or a net write is flipped
	Close    float64       // the connection is closed instead of the call
	MaxDelay time.Duration // 0 = 1ms
}

// Stats counts the faults injected so far.
type Stats struct {
	Drops, Delays, Corruptions, Closes int64
}

// injector draws faults from a seeded generator.
type injector struct {
	cfg   Config
	mu    sync.Mutex
	rng   *rand.Rand
	stats struct{ drops, delays, corrupts, closes atomic.Int64 }
}

func newInjector(cfg Config) *injector {
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = time.Millisecond
	}
	return &injector{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
}

// roll returns true with probability p and counts it in n.
func (in *injector) roll(p float64, n *atomic.Int64) bool {
	if p <= 0 {
		return false
	}
	in.mu.Lock()
	hit := in.rng.Float64() < p
	in.mu.Unlock()
	if hit {
		n.Add(1)
	}
	return hit
}

func (in *injector) intn(n int) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rng.IntN(n)
}

// delay sleeps up to MaxDelay when the delay fault fires, honouring ctx.
func (in *injector) delay(ctx context.Context) error {
	if !in.roll(in.cfg.Delay, &in.stats.delays) {
		return nil
	}
	t := time.NewTimer(time.Duration(in.intn(int(in.cfg.MaxDelay)) + 1))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return gccl.Errorf(gccl.TimeoutError, "fault", "injected delay outlived the deadline: %w", ctx.Err())
	}
}

// corrupt returns p, or a copy of p with one bit flipped when the fault fires.
func (in *injector) corrupt(p []byte) []byte {
	if len(p) == 0 || !in.roll(in.cfg.Corrupt, &in.stats.corrupts) {
		return p
	}
	q := append([]byte(nil), p...)
	bit := in.intn(8 * len(q))
	q[bit/8] ^= 1 << (bit % 8)
	return q
}

func (in *injector) snapshot() Stats {
	return Stats{in.stats.drops.Load(), in.stats.delays.Load(), in.stats.corrupts.Load(), in.stats.closes.Load()}
}

// Conn is a transport.Conn with injected faults.
type Conn struct {
	inner transport.Conn
	in    *injector
}

// Wrap returns c behind a fault injector configured by cfg. The result is a
// *Conn, whose Stats say which faults fired.
func Wrap(c transport.Conn, cfg Config) transport.Conn { return &Conn{inner: c, in: newInjector(cfg)} }

var _ transport.Conn = (*Conn)(nil)

// Send may close the connection, delay, drop p or send a corrupted copy.
func (c *Conn) Send(ctx context.Context, d transport.Desc, p []byte) error {
	if c.in.roll(c.in.cfg.Close, &c.in.stats.closes) {
		c.inner.Close()
		return gccl.Errorf(gccl.RemoteError, "fault", "injected close")
	}
	if err := c.in.delay(ctx); err != nil {
		return err
	}
	if c.in.roll(c.in.cfg.Drop, &c.in.stats.drops) {
		return nil
	}
	return c.inner.Send(ctx, d, c.in.corrupt(p))
}

// Recv may close the connection or delay, and may hand consume corrupted
// copies of pieces.
func (c *Conn) Recv(ctx context.Context, accept func(transport.Desc, int) error, consume func(piece []byte) error) error {
	if c.in.roll(c.in.cfg.Close, &c.in.stats.closes) {
		c.inner.Close()
		return gccl.Errorf(gccl.RemoteError, "fault", "injected close")
	}
	if err := c.in.delay(ctx); err != nil {
		return err
	}
	return c.inner.Recv(ctx, accept, func(p []byte) error { return consume(c.in.corrupt(p)) })
}

// Refusal is the wrapped Conn's, if it has one.
func (c *Conn) Refusal() error {
	if r, ok := c.inner.(interface{ Refusal() error }); ok {
		return r.Refusal()
	}
	return nil
}

// Fail fails the wrapped Conn.
func (c *Conn) Fail(err error) { c.inner.Fail(err) }

// Close closes the wrapped Conn.
func (c *Conn) Close() error { return c.inner.Close() }

// Stats reports the faults injected so far.
func (c *Conn) Stats() Stats { return c.in.snapshot() }

// NetConn is a net.Conn with faults injected into its writes, below any
// framing the transport puts on the bytes.
type NetConn struct {
	gonet.Conn
	in *injector
}

// WrapNet returns c behind a fault injector: each Write may be delayed,
// dropped (reported as written), corrupted in one bit, or replaced by
// closing the connection.
func WrapNet(c gonet.Conn, cfg Config) *NetConn { return &NetConn{Conn: c, in: newInjector(cfg)} }

// Write writes p, or a fault in its place.
func (c *NetConn) Write(p []byte) (int, error) {
	if c.in.roll(c.in.cfg.Close, &c.in.stats.closes) {
		c.Conn.Close()
		return 0, gccl.Errorf(gccl.RemoteError, "fault", "injected close")
	}
	if err := c.in.delay(context.Background()); err != nil {
		return 0, err
	}
	if c.in.roll(c.in.cfg.Drop, &c.in.stats.drops) {
		return len(p), nil
	}
	return c.Conn.Write(c.in.corrupt(p))
}

// Stats reports the faults injected so far.
func (c *NetConn) Stats() Stats { return c.in.snapshot() }
