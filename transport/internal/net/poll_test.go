package net

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// testUntil Tests q until it is done (or the test's deadline passes), as
// a polling caller does, and returns its result.
func testUntil(t *testing.T, q network.Request) (int, error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		done, n, err := q.Test()
		if done || err != nil {
			return n, err
		}
		require.True(t, time.Now().Before(deadline), "the request was not done in 10s")
	}
}

// TestPollOnly: after PollOnly the control socket's SO_RCVLOWAT is
// raised, and receives that are only Tested still get every transfer
// whole and in order: random sizes, inline and in pieces, several in
// flight, every byte checked.
func TestPollOnly(t *testing.T) {
	s, r := commPair(t, 3)
	require.NoError(t, r.PollOnly())
	var lowat int
	require.NoError(t, r.raw.Control(func(fd uintptr) {
		lowat, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
	}))
	require.Greater(t, lowat, MaxInline+HeaderSize, "SO_RCVLOWAT")

	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	const inFlight = 4
	for round := range 50 {
		sends, recvs := make([][]byte, inFlight), make([][]byte, inFlight)
		rqs, sqs := make([]network.Request, inFlight), make([]network.Request, inFlight)
		for i := range inFlight {
			size := rng.IntN(2048)
			if rng.IntN(8) == 0 {
				size = MaxInline + 1 + rng.IntN(200000) // in pieces
			}
			sends[i], recvs[i] = make([]byte, size), make([]byte, size)
			for j := range sends[i] {
				sends[i][j] = byte(rng.Uint32())
			}
			tag := uint32(round*inFlight + i)
			rqs[i] = postOn(t, r, recvs[i], func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, tag) })
			sqs[i] = postOn(t, s, sends[i], func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, tag) })
		}
		for i := range inFlight {
			n, err := testUntil(t, rqs[i])
			require.NoError(t, err, "round %d transfer %d", round, i)
			require.Equal(t, len(sends[i]), n)
			require.Equal(t, sends[i], recvs[i][:n], "round %d transfer %d", round, i)
			_, err = testUntil(t, sqs[i])
			require.NoError(t, err)
		}
	}
}

// TestPollOnlyPeerClosed: after PollOnly a sender's orderly Close still
// reaches a receive that is only Tested (the end of the stream wakes the
// reader goroutine whatever the mark): it fails with
// network.ErrPeerClosed.
func TestPollOnlyPeerClosed(t *testing.T) {
	s, r := commPair(t, 2)
	require.NoError(t, r.PollOnly())
	got := make([]byte, 10)
	rq := postOn(t, r, got, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 1) })
	require.NoError(t, s.Close())
	_, err := testUntil(t, rq)
	require.ErrorIs(t, err, network.ErrPeerClosed)
}
