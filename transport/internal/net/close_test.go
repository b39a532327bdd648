package net

import (
	"context"
	"errors"
	gonet "net"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/nettest"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// gatedConn holds a write of more than a header, after the socket took
// it, until gate closes: the receiver may have everything before the
// sender's helper counts the piece done.
type gatedConn struct {
	gonet.Conn
	gate chan struct{}
}

func (c gatedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if len(b) > HeaderSize {
		<-c.gate
	}
	return n, err
}

// TestReceiverCloseAfterAllReceived: a receiver that received a whole
// transfer and closed does not fail the send of it, even when the
// sender's helpers had not yet counted their last writes done; later
// sends fail with gccl.ErrRemote.
func TestReceiverCloseAfterAllReceived(t *testing.T) {
	out, in := nettest.TCPPairs(t, 3)
	gate := make(chan struct{})
	for i := 1; i < len(out); i++ {
		out[i] = gatedConn{out[i], gate}
	}
	s, err := NewSendComm(out, Options{Timeout: 5 * time.Second})
	require.NoError(t, err)
	r, err := NewRecvComm(in, Options{Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); r.Close() })

	data := make([]byte, 300007)
	for i := range data {
		data[i] = byte(i * 7)
	}
	got := make([]byte, len(data))
	rq := postOn(t, r, got, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 5) })
	sq := postOn(t, s, data, func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, 5) })
	n, err := waitFor(t, rq)
	require.NoError(t, err)
	require.Equal(t, data, got[:n])
	require.NoError(t, r.Close())
	time.Sleep(50 * time.Millisecond) // the sender sees the close
	close(gate)
	_, err = waitFor(t, sq)
	require.NoError(t, err, "a send the receiver received whole")

	m, err := s.Register(network.HostRegion(data))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		q, err := s.Isend(network.HostRegion(data[:10]), m, 6)
		if err == nil && q != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = q.(network.Waiter).Wait(ctx)
			cancel()
		}
		return gccl.Code(err) == gccl.RemoteError
	}, 5*time.Second, time.Millisecond, "sends after the receiver closed")
}

// TestOrderlyCloseIsPeerClosed: an end that closes with Close says bye,
// so its peer's receive (the sender closed) or send (the receiver
// closed) fails with network.ErrPeerClosed, a gccl.ErrRemote; one that
// ends with Abort, as a killed process does, fails its peer's requests
// with gccl.ErrRemote alone.
func TestOrderlyCloseIsPeerClosed(t *testing.T) {
	for _, abort := range []bool{false, true} {
		end := func(c network.Comm) {
			if abort {
				require.NoError(t, network.Abort(c))
			} else {
				require.NoError(t, c.Close())
			}
		}
		check := func(err error, what string) {
			require.ErrorIs(t, err, gccl.ErrRemote, "%s, abort %v", what, abort)
			require.Equal(t, !abort, errors.Is(err, network.ErrPeerClosed), "%s, abort %v: %v", what, abort, err)
		}
		s, r := commPair(t, 3)
		rq := postOn(t, r, make([]byte, 10), func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 1) })
		end(s)
		_, err := waitFor(t, rq)
		check(err, "a receive the closed sender leaves unfilled")

		s, r = commPair(t, 3)
		end(r)
		buf := make([]byte, 10)
		m, err := s.Register(network.HostRegion(buf))
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			q, err := s.Isend(network.HostRegion(buf), m, 1)
			if err == nil && q != nil {
				_, err = waitFor(t, q)
			}
			if err != nil {
				check(err, "a send after the receiver closed")
			}
			return err != nil
		}, 5*time.Second, time.Millisecond)
	}
}
