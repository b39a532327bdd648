package proxy

import (
	"errors"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
)

// link is a sending or receiving connection.
type link interface{ base() *conn }

// conn is what both kinds of connection have: the FIFO, the provider's
// connection and the registration of the FIFO's memory with it.
type conn struct {
	f      FIFO
	comm   network.Comm
	mh     network.MemHandle
	region network.Region // the FIFO's whole memory, as registered
	label  Label
	what   string // "send" or "recv"
}

func (c *conn) base() *conn { return c }

// newLink checks f and registers its memory with comm.
func (p *Proxy) newLink(f FIFO, comm network.Comm, l Label, what string) (*conn, error) {
	if f.IsZero() {
		return nil, gccl.Errorf(gccl.InvalidArgument, "f", "the zero FIFO for %v: make it with proxy.NewFIFO", l)
	}
	region := network.HostRegion(f.Bytes())
	mh, err := comm.Register(region)
	if err != nil {
		return nil, gccl.Errorf(gccl.Code(err), l.String(), "registering the %s FIFO: %w", what, err)
	}
	return &conn{f: f, comm: comm, mh: mh, region: region, label: l, what: what}, nil
}

// slot is the region of the first n bytes of the slot of sequence number s.
func (c *conn) slot(s uint64, n int) network.Region {
	return c.region.Slice(c.f.SlotOffset(s), n)
}

// errorf is a failure of this connection: a *gccl.Error naming it.
func (c *conn) errorf(code gccl.Result, format string, a ...any) error {
	return gccl.Errorf(code, c.label.String()+" "+c.what, format, a...)
}

// failed wraps a provider's failure of slot s, keeping its code.
func (c *conn) failed(s uint64, err error) error {
	if errors.Is(err, network.ErrPeerClosed) {
		return c.errorf(gccl.Code(err), "slot %d: peer rank %d closed its communicator before this rank was done with it: %w", s, c.label.Peer, err)
	}
	return c.errorf(gccl.Code(err), "slot %d: %w", s, err)
}

// release ends the connection with end (its Close, or network.Abort),
// which fails its pending requests, then deregisters the FIFO (a provider
// may release it in Close already).
func (c *conn) release(end func(network.Comm) error) error {
	cerr := end(c.comm)
	derr := c.comm.Deregister(c.mh)
	if cerr != nil {
		cerr = c.errorf(gccl.Code(cerr), "closing: %w", cerr)
	}
	if derr != nil {
		derr = c.errorf(gccl.Code(derr), "deregistering the FIFO: %w", derr)
	}
	return errors.Join(cerr, derr)
}

// ConnStats are what one connection carried, counted by the proxy's
// goroutine: the evidence of whether the GPU's copies into or out of the
// FIFO overlapped with the network (docs/gpunet.md, "What the proxy
// counts").
type ConnStats struct {
	Label Label
	Send  bool   // a sending FIFO; false: a receiving one
	Slots uint64 // slots sent or received
	Bytes uint64 // their bytes
	// Wire (sending FIFOs) is the time during which at least one of the
	// connection's sends was in flight, so Bytes/Wire is the rate the
	// network took the slots at.
	Wire time.Duration
	// Overlapped counts the slots that overlapped with the network: for a
	// sending FIFO, slots the GPU posted while an earlier slot of the
	// connection was still in flight (the GPU filled a slot while the
	// network carried another); for a receiving FIFO, slots that arrived
	// while the GPU had not yet consumed an earlier one (the network
	// filled a slot while the GPU read another).
	Overlapped uint64
}

// sendConn serves a sending FIFO: slots [done, sent) are posted, done is
// the head the proxy stored last.
type sendConn struct {
	*conn
	sc    network.SendComm
	ref   network.Refuser // sc's, nil if it is none
	sent  uint64
	done  uint64
	since int64 // when the connection last progressed or got work (ns)
	last  int64 // when the previous step ended (ns), if sends were in flight then; else -1
	reqs  [NSlots]network.Request
	stats ConnStats
}

func (c *sendConn) start(now int64) {
	c.done = c.f.Head()
	c.sent, c.since, c.last = c.done, now, -1
	c.stats = ConnStats{Label: c.label, Send: true}
}

// step posts the slots the GPU posted and completes sends in order. busy:
// sends are in flight; moved: anything was posted or completed. clock
// reads the time (ns) for stats.Wire.
func (c *sendConn) step(now, timeout int64, clock func() int64) (busy, moved bool, err error) {
	if c.ref != nil {
		if err := c.ref.Refusal(); err != nil {
			return false, false, c.errorf(gccl.Code(err), "the receiver failed: %w", err)
		}
	}
	tail := c.f.Tail()
	if tail < c.sent || tail-c.done > NSlots {
		return false, false, c.errorf(gccl.InternalError, "the GPU stored tail %d with %d slots posted and %d sent (head): the sending FIFO is corrupted", tail, c.sent, c.done)
	}
	if c.done == c.sent && tail > c.sent {
		c.since = now // work arrived on an idle connection
	}
	onWire := c.done < c.sent
	if c.last >= 0 {
		c.stats.Wire += time.Duration(now - c.last) // in flight since the last step
	}
	slots := c.stats.Slots
	defer func() { c.timeWire(now, onWire || c.stats.Slots != slots, clock) }()
	for c.sent < tail {
		n := c.f.Size(c.sent)
		if n > uint32(c.f.slotBytes) {
			return false, false, c.errorf(gccl.InternalError, "the GPU stored size %d for slot %d, more than the %d-byte slots: the sending FIFO is corrupted", n, c.sent, c.f.slotBytes)
		}
		r, err := c.sc.Isend(c.slot(c.sent, int(n)), c.mh, uint32(c.sent))
		if err != nil {
			return false, false, c.failed(c.sent, err)
		}
		if r == nil {
			break // the provider takes no more now
		}
		c.reqs[c.sent%NSlots] = r
		c.sent++
		moved = true
		c.stats.Slots++
		c.stats.Bytes += uint64(n)
		if onWire {
			c.stats.Overlapped++
		}
	}
	for c.done < c.sent {
		i := c.done % NSlots
		ok, _, err := c.reqs[i].Test()
		if err != nil {
			c.reqs[i] = nil
			return false, false, c.failed(c.done, err)
		}
		if !ok {
			break
		}
		c.reqs[i] = nil
		c.done++
		c.f.StoreHead(c.done)
		c.since, moved = now, true
	}
	if c.done < tail && now-c.since > timeout {
		return false, false, c.errorf(gccl.TimeoutError, "slot %d: no progress for %v with %d slots to send: the peer is gone or stuck (raise GCCL_TIMEOUT if it is just slow)", c.done, time.Duration(now-c.since), tail-c.done)
	}
	return c.done < c.sent, moved, nil
}

// timeWire adds this step's time to stats.Wire if a send was in flight
// during it (active: one was at its start, or one was posted in it) and
// notes whether one still is.
func (c *sendConn) timeWire(start int64, active bool, clock func() int64) {
	c.last = -1
	if active {
		end := clock()
		c.stats.Wire += time.Duration(end - start)
		if c.done < c.sent {
			c.last = end
		}
	}
}

// recvConn serves a receiving FIFO: receives [done, posted) are posted,
// done is the tail the proxy stored last, head the GPU's last seen.
type recvConn struct {
	*conn
	rc      network.RecvComm
	left    bool // the peer closed its end in order (Proxy.peerLeft): served no more
	posted  uint64
	done    uint64
	head    uint64
	arrived int64 // when a slot last arrived, or the connection was added (ns)
	reqs    [NSlots]network.Request
	stats   ConnStats
}

func (c *recvConn) start(now int64) {
	c.done = c.f.Tail()
	c.posted, c.head, c.arrived = c.done, c.f.Head(), now
	c.stats = ConnStats{Label: c.label}
}

// quiet reports whether nothing arrived on the connection for quietAfter.
func (c *recvConn) quiet(now int64) bool { return now-c.arrived > quietAfter }

// step keeps NSlots receives posted ahead of the GPU's head and completes
// them in order, storing each size, then tail; test false skips the
// completions (Proxy.serve says when). moved: anything was posted or
// completed.
func (c *recvConn) step(now int64, test bool) (moved bool, err error) {
	head := c.f.Head()
	if head > c.done || head < c.head {
		return false, c.errorf(gccl.InternalError, "the GPU stored head %d after %d with %d slots arrived (tail): the receiving FIFO is corrupted", head, c.head, c.done)
	}
	c.head = head
	for c.posted < head+NSlots {
		r, err := c.rc.Irecv(c.slot(c.posted, c.f.slotBytes), c.mh, uint32(c.posted))
		if err != nil {
			return false, c.failed(c.posted, err)
		}
		if r == nil {
			break
		}
		c.reqs[c.posted%NSlots] = r
		c.posted++
		moved = true
	}
	for test && c.done < c.posted {
		i := c.done % NSlots
		ok, n, err := c.reqs[i].Test()
		if err != nil {
			c.reqs[i] = nil
			return false, c.failed(c.done, err)
		}
		if !ok {
			break
		}
		c.reqs[i] = nil
		if n < 0 || n > c.f.slotBytes {
			return false, c.errorf(gccl.InternalError, "slot %d: the provider reported %d bytes received into a %d-byte slot", c.done, n, c.f.slotBytes)
		}
		c.f.SetSize(c.done, uint32(n))
		c.stats.Slots++
		c.stats.Bytes += uint64(n)
		if head < c.done {
			c.stats.Overlapped++
		}
		c.done++
		c.f.StoreTail(c.done)
		c.arrived, moved = now, true
	}
	return moved, nil
}
