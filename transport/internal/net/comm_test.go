package net

import (
	"context"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/nettest"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

func commPair(t *testing.T, nsocks int) (*SendComm, *RecvComm) {
	out, in := nettest.TCPPairs(t, nsocks)
	s, err := NewSendComm(out, Options{Timeout: 5 * time.Second})
	require.NoError(t, err)
	r, err := NewRecvComm(in, Options{Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); r.Close() })
	return s, r
}

// post registers b with c and posts it.
func postOn(t *testing.T, c network.Comm, b []byte, f func(network.Region, network.MemHandle) (network.Request, error)) network.Request {
	m, err := c.Register(network.HostRegion(b))
	require.NoError(t, err)
	q, err := f(network.HostRegion(b), m)
	require.NoError(t, err)
	require.NotNil(t, q)
	return q
}

func waitFor(t *testing.T, q network.Request) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return q.(network.Waiter).Wait(ctx)
}

// TestMismatchesAreInvalidUsage: a transfer whose tag or size disagrees
// with the posted receive fails both with an error naming both values.
func TestMismatchesAreInvalidUsage(t *testing.T) {
	for _, c := range []struct {
		sendTag, recvTag uint32
		send, recv       int
		want             string
	}{{1, 2, 10, 10, "tag 1"}, {3, 3, 300000, 1000, "300000 bytes"}, {3, 3, 11, 10, "11 bytes"}} {
		s, r := commPair(t, 3)
		rq := postOn(t, r, make([]byte, c.recv), func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, c.recvTag) })
		postOn(t, s, make([]byte, c.send), func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, c.sendTag) })
		_, err := waitFor(t, rq)
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "%+v", c)
		require.Contains(t, err.Error(), c.want)
	}
}

// TestFailTravelsBack: a receiver's Fail reaches the sender with its code
// and message: Refusal reports it and Isends fail with it.
func TestFailTravelsBack(t *testing.T) {
	s, r := commPair(t, 2)
	r.Fail(gccl.Errorf(gccl.InvalidUsage, "op", "rank 1 expected another operation"))
	require.Eventually(t, func() bool { return s.Refusal() != nil }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, s.Refusal(), gccl.ErrInvalidUsage)
	require.Contains(t, s.Refusal().Error(), "another operation")
	m, err := s.Register(network.HostRegion(make([]byte, 1)))
	require.NoError(t, err)
	_, err = s.Isend(m.Region(), m, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
}

// TestFailTravelsForward: a sender's Fail reaches the receiver with its
// code and message after what it sent before: the transfer already sent
// is still received whole, the receive posted after it and a later one
// fail with the failure, and the sender's later Isends fail with it too.
// A PollOnly receiver (the GPU proxy) sees it by Test alone.
func TestFailTravelsForward(t *testing.T) {
	for _, pollOnly := range []bool{false, true} {
		s, r := commPair(t, 2)
		if pollOnly {
			require.NoError(t, r.PollOnly())
		}
		sent := []byte("before the failure")
		first := make([]byte, len(sent))
		fq := postOn(t, r, first, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 7) })
		sq := postOn(t, s, sent, func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, 7) })
		_, err := waitFor(t, sq)
		require.NoError(t, err)
		rq := postOn(t, r, make([]byte, 8), func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 8) })
		s.Fail(gccl.Errorf(gccl.InvalidUsage, "op", "rank 0's kernel stopped"))
		for _, q := range []network.Request{fq, rq} {
			var err error
			require.Eventually(t, func() bool {
				var done bool
				done, _, err = q.Test()
				return done || err != nil
			}, 5*time.Second, time.Millisecond, "pollOnly=%v", pollOnly)
			if q == fq {
				require.NoError(t, err, "pollOnly=%v: the transfer sent before the failure", pollOnly)
				require.Equal(t, sent, first)
				continue
			}
			require.ErrorIs(t, err, gccl.ErrInvalidUsage, "pollOnly=%v", pollOnly)
			require.Contains(t, err.Error(), "kernel stopped")
		}
		m, err := r.Register(network.HostRegion(make([]byte, 1)))
		require.NoError(t, err)
		_, err = r.Irecv(m.Region(), m, 9)
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "pollOnly=%v: a later receive", pollOnly)
		_, err = s.Isend(m.Region(), m, 9)
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "pollOnly=%v: a later send", pollOnly)
	}
}

// TestRequestsAreReused: a connection's requests come back after Test
// reports them done, so a long stream allocates none.
func TestRequestsAreReused(t *testing.T) {
	s, r := commPair(t, 2)
	sb, rb := make([]byte, 100), make([]byte, 100)
	sm, err := s.Register(network.HostRegion(sb))
	require.NoError(t, err)
	rm, err := r.Register(network.HostRegion(rb))
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(200, func() {
		rq, _ := r.Irecv(network.HostRegion(rb), rm, 0)
		sq, _ := s.Isend(network.HostRegion(sb), sm, 0)
		_, _ = sq.(network.Waiter).Wait(context.Background())
		_, _ = rq.(network.Waiter).Wait(context.Background())
	})
	require.Zero(t, allocs, "allocations per small transfer")
}
