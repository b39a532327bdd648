package net

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// rcvLowat reads r's control socket's SO_RCVLOWAT back.
func rcvLowat(t *testing.T, r *RecvComm) int {
	t.Helper()
	var v int
	var err error
	require.NoError(t, r.raw.Control(func(fd uintptr) {
		v, err = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
	}))
	require.NoError(t, err)
	return v
}

// raised reports whether a mark keeps any frame from making the socket
// readable; lowered, whether any byte makes it readable (a fresh socket's
// mark reads 0 on recent kernels, which means 1).
func raised(v int) bool  { return v > MaxInline+HeaderSize }
func lowered(v int) bool { return v <= 1 }

// setSpin sets the spin time for the test, auto again after it.
func setSpin(t *testing.T, d time.Duration) {
	futex.SetSpin(d)
	t.Cleanup(func() { futex.SetSpin(-1) })
}

// randomBytes returns n random bytes.
func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// waitAsync Waits for q on its own goroutine (ctx bounds it) and delivers the result.
func waitAsync(ctx context.Context, q network.Request) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := q.(network.Waiter).Wait(ctx)
		done <- err
	}()
	return done
}

// TestSpinRaisesMark: while a Wait spins on a receive, the control
// socket's SO_RCVLOWAT is raised; once the transfer is done, the Wait's
// context ends, or the peer closes during the spin, it is 1 again. With
// no spin time it is never raised.
func TestSpinRaisesMark(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	s, r := commPair(t, 2)
	require.True(t, lowered(rcvLowat(t, r)))
	setSpin(t, 10*time.Second)

	// done: the mark is raised while it spins, 1 as soon as Wait returns.
	want := randomBytes(rng, 1+rng.IntN(4096))
	got := make([]byte, len(want))
	rq := postOn(t, r, got, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 1) })
	res := waitAsync(context.Background(), rq)
	require.Eventually(t, func() bool { return raised(rcvLowat(t, r)) }, 5*time.Second, time.Millisecond, "SO_RCVLOWAT while a receive spins")
	sq := postOn(t, s, want, func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, 1) })
	require.NoError(t, <-res)
	require.True(t, lowered(rcvLowat(t, r)), "SO_RCVLOWAT after the spinning receive is done")
	require.Equal(t, want, got)
	_, err := waitFor(t, sq)
	require.NoError(t, err)

	// the context ends during the spin.
	ctx, cancel := context.WithCancel(context.Background())
	rq = postOn(t, r, got, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 2) })
	res = waitAsync(ctx, rq)
	require.Eventually(t, func() bool { return raised(rcvLowat(t, r)) }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-res, context.Canceled)
	require.True(t, lowered(rcvLowat(t, r)), "SO_RCVLOWAT after a cancelled spin")

	// the peer closes during the spin: the still posted receive fails.
	res = waitAsync(context.Background(), rq)
	require.Eventually(t, func() bool { return raised(rcvLowat(t, r)) }, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.ErrorIs(t, <-res, network.ErrPeerClosed)
	require.True(t, lowered(rcvLowat(t, r)), "SO_RCVLOWAT after a failed spin")
}

// TestNoSpinNoMark: with no spin time a Wait sleeps at once and the mark
// stays 1.
func TestNoSpinNoMark(t *testing.T) {
	setSpin(t, 0)
	s, r := commPair(t, 2)
	got := make([]byte, 100)
	rq := postOn(t, r, got, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 1) })
	res := waitAsync(context.Background(), rq)
	time.Sleep(20 * time.Millisecond)
	require.True(t, lowered(rcvLowat(t, r)))
	postOn(t, s, make([]byte, 100), func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, 1) })
	require.NoError(t, <-res)
	require.True(t, lowered(rcvLowat(t, r)))
}

// TestRaisedFrameWakesSleeper: a frame that arrives while the mark is
// raised (here held by a stand-in for a spinner on another receive) and
// that no spinner reads stays in the socket, unseen, while a Wait for it
// sleeps (its own spin, a nanosecond, is over); once the last spinner
// lowers the mark, the kernel signals the socket readable at once
// (tcp_set_rcvlowat), the reader goroutine reads the frame and the Wait
// wakes. Were the mark left raised, the Wait would time out.
func TestRaisedFrameWakesSleeper(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, uint64(time.Now().UnixNano())))
	setSpin(t, time.Nanosecond)
	s, r := commPair(t, 3)
	proved := 0
	for round := range 5 {
		r.mark.enter() // another receive's spinner
		require.True(t, raised(rcvLowat(t, r)))
		want := randomBytes(rng, 1+rng.IntN(MaxInline))
		got := make([]byte, len(want))
		tag := uint32(round)
		rq := postOn(t, r, got, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, tag) })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res := waitAsync(ctx, rq)
		time.Sleep(20 * time.Millisecond) // its spin is over: it sleeps
		sq := postOn(t, s, want, func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, tag) })
		_, err := waitFor(t, sq)
		require.NoError(t, err)
		select {
		case err := <-res: // read by its own spin, on a machine too loaded to start it in 20 ms; or the mark was not raised
			t.Logf("round %d: the receive completed while the mark was raised (%v)", round, err)
			r.mark.leave()
			cancel()
			continue
		case <-time.After(50 * time.Millisecond):
		}
		proved++
		start := time.Now()
		r.mark.leave()
		require.NoError(t, <-res, "round %d: the sleeping Wait after the mark was lowered", round)
		t.Logf("round %d: %d bytes, woken %v after the mark was lowered", round, len(want), time.Since(start))
		cancel()
		require.Equal(t, want, got, "round %d", round)
		require.True(t, lowered(rcvLowat(t, r)))
	}
	require.GreaterOrEqual(t, proved, 3, "rounds whose frame waited, unseen, for the mark to be lowered")
}

// TestConcurrentSpinners: several goroutines Wait at once on receives of
// one connection, spinning for random times (none, a microsecond, tens of
// microseconds, a millisecond), while the sender sends random sizes, inline
// and in pieces, of random bytes, after random pauses, so that frames
// arrive before, during and after the spins and while the mark goes up and
// down: every transfer arrives whole (every byte checked), and once the
// last spinner is out the mark is 1.
func TestConcurrentSpinners(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, uint64(time.Now().UnixNano())))
	spins := []time.Duration{0, time.Microsecond, 20 * time.Microsecond, time.Millisecond}
	setSpin(t, 0)
	s, r := commPair(t, 3)
	for round := range 40 {
		futex.SetSpin(spins[rng.IntN(len(spins))])
		k := 2 + rng.IntN(5)
		sends, recvs := make([][]byte, k), make([][]byte, k)
		res := make([]<-chan error, k)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for i := range k {
			size := rng.IntN(4096)
			switch rng.IntN(6) {
			case 0:
				size = rng.IntN(MaxInline + 1)
			case 1:
				size = MaxInline + 1 + rng.IntN(300000) // in pieces
			}
			sends[i], recvs[i] = randomBytes(rng, size), make([]byte, size)
			tag := uint32(round*8 + i)
			rq := postOn(t, r, recvs[i], func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, tag) })
			res[i] = waitAsync(ctx, rq)
		}
		pauses := make([]time.Duration, k)
		for i := range pauses {
			pauses[i] = time.Duration(rng.IntN(300)) * time.Microsecond
		}
		sent := make(chan error, 1)
		go func() {
			var err error
			for i := range k {
				time.Sleep(pauses[i])
				tag := uint32(round*8 + i)
				var m network.MemHandle
				if m, err = s.Register(network.HostRegion(sends[i])); err != nil {
					break
				}
				var q network.Request
				if q, err = s.Isend(network.HostRegion(sends[i]), m, tag); err != nil {
					break
				}
				if _, err = q.(network.Waiter).Wait(ctx); err != nil {
					break
				}
			}
			sent <- err
		}()
		for i := range k {
			require.NoError(t, <-res[i], "round %d transfer %d", round, i)
			require.Equal(t, sends[i], recvs[i], "round %d transfer %d of %d bytes", round, i, len(sends[i]))
		}
		require.NoError(t, <-sent)
		cancel()
		require.True(t, lowered(rcvLowat(t, r)), "round %d", round)
		require.Zero(t, r.mark.spinners, "round %d", round)
	}
}

// TestPollOnlySpin: after PollOnly, spinning Waits leave the mark raised.
func TestPollOnlySpin(t *testing.T) {
	setSpin(t, 10*time.Second)
	s, r := commPair(t, 2)
	require.NoError(t, r.PollOnly())
	for tag := range uint32(3) {
		got := make([]byte, 64)
		rq := postOn(t, r, got, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, tag) })
		res := waitAsync(context.Background(), rq)
		time.Sleep(5 * time.Millisecond)
		postOn(t, s, make([]byte, 64), func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, tag) })
		require.NoError(t, <-res)
		require.True(t, raised(rcvLowat(t, r)), "SO_RCVLOWAT after a spin, with PollOnly")
	}
}

// TestMarkAllocatesNothing: raising and lowering the mark, as every spin
// does, allocates nothing.
func TestMarkAllocatesNothing(t *testing.T) {
	_, r := commPair(t, 2)
	allocs := testing.AllocsPerRun(100, func() { r.mark.enter(); r.mark.leave() })
	require.Zero(t, allocs)
	require.True(t, lowered(rcvLowat(t, r)))
}
