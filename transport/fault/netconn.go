package fault

import (
	"context"
	gonet "net"

	"github.com/gccl/gccl"
)

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
