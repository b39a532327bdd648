package net

import (
	"context"
	"errors"
	"io"
	gonet "net"
	"sync"
	"syscall"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/auth"
	"github.com/gccl/gccl/internal/wait"
)

// Dialer opens connections as one rank of one communicator.
type Dialer struct {
	ID      Identity
	Rank    int
	Timeout time.Duration // bounds a Dial whose ctx has no deadline
}

// Dial opens count sockets to the listener at addr for channel, presenting
// d's identity and rank, and waits for each to be accepted.
func (d Dialer) Dial(ctx context.Context, addr string, channel, count int) ([]gonet.Conn, error) {
	if count < 1 || count > MaxSockets {
		return nil, gccl.Errorf(gccl.InvalidArgument, "count", "socket count %d out of range (1..%d)", count, MaxSockets)
	}
	if channel < 0 || channel >= MaxChannel {
		return nil, gccl.Errorf(gccl.InvalidArgument, "channel", "channel %d out of range (0..%d)", channel, MaxChannel-1)
	}
	if d.Rank < 0 || d.Rank >= MaxRank {
		return nil, gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d out of range (0..%d)", d.Rank, MaxRank-1)
	}
	deadline := wait.Deadline(ctx, d.Timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	socks := make([]gonet.Conn, 0, count)
	for i := range count {
		c, err := d.dialOne(ctx, addr, hello{rank: d.Rank, channel: channel, index: i, count: count})
		if err != nil {
			for _, s := range socks {
				s.Close()
			}
			return nil, err
		}
		socks = append(socks, c)
	}
	return socks, nil
}

func (d Dialer) dialOne(ctx context.Context, addr string, h hello) (gonet.Conn, error) {
	var nd gonet.Dialer
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, gccl.Errorf(gccl.TimeoutError, addr, "dialling the peer: %w", err)
		}
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
			// The address came from the peer itself at init: its listener is gone.
			return nil, gccl.Errorf(gccl.RemoteError, addr, "dialling the peer: it refused or reset the connection (it exited, aborted or crashed): %w", err)
		}
		return nil, gccl.Errorf(gccl.SystemError, addr, "dialling the peer (is it running, and is GCCL_SOCKET_IFNAME right?): %w", err)
	}
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	it := interruptOn(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	setNoDelay(c)
	err = d.prove(c, &h)
	it.disarm()
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, gccl.Errorf(gccl.TimeoutError, addr, "handshake with the peer: %w", err)
		}
		return nil, gccl.Errorf(gccl.RemoteError, addr, "the peer rejected the connection (different communicator or wrong secret): %w", err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// prove answers the listener's challenge with h signed by d's identity and
// checks the listener's own proof in its acknowledgement.
func (d Dialer) prove(c gonet.Conn, h *hello) error {
	var challenge auth.Nonce
	if _, err := io.ReadFull(c, challenge[:]); err != nil {
		return err
	}
	h.sign(d.ID, challenge)
	if _, err := c.Write(h.marshal()); err != nil {
		return err
	}
	b := make([]byte, ackSize)
	if _, err := io.ReadFull(c, b[:1]); err != nil {
		return err
	}
	if b[0] != ackOK {
		return errors.New("rejected")
	}
	if _, err := io.ReadFull(c, b[1:]); err != nil {
		return err
	}
	if !checkAck(b, d.ID, *h, challenge) {
		return errors.New("the listener could not prove it holds the secret")
	}
	return nil
}

// setNoDelay turns Nagle off on TCP sockets (Go's default, made explicit).
func setNoDelay(c gonet.Conn) {
	if tc, ok := c.(*gonet.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}

// interrupter sets past deadlines on sockets when a context ends, until it is
// disarmed; after disarm returns, it never touches the sockets again.
type interrupter struct {
	mu   sync.Mutex
	done bool
	stop func() bool
}

func interruptOn(ctx context.Context, set func()) *interrupter {
	it := &interrupter{}
	it.stop = context.AfterFunc(ctx, func() {
		it.mu.Lock()
		defer it.mu.Unlock()
		if !it.done {
			set()
		}
	})
	return it
}

func (it *interrupter) disarm() {
	it.stop()
	it.mu.Lock()
	it.done = true
	it.mu.Unlock()
}
