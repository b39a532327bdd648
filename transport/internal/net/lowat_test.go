package net

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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

// recvOn posts a receive into b with tag on r.
func recvOn(t *testing.T, r *RecvComm, b []byte, tag uint32) *request {
	t.Helper()
	return postOn(t, r, b, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, tag) }).(*request)
}

// sendOn posts the send of b with tag on s.
func sendOn(t *testing.T, s *SendComm, b []byte, tag uint32) network.Request {
	t.Helper()
	return postOn(t, s, b, func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, tag) })
}

// countSets counts the setsockopt calls of r's mark from now on.
func countSets(r *RecvComm) *atomic.Int32 {
	n := new(atomic.Int32)
	set := r.mark.setF
	r.mark.setF = func(fd uintptr) { n.Add(1); set(fd) }
	return n
}

// unseen waits until the n bytes that a transfer for rq puts on r's
// control socket are buffered there (SIOCINQ) and reports whether they
// stay there, unread, for 20 ms: false where the reader goroutine read
// them anyway. Whatever the mark, the kernel wakes it when the receive
// window nearly closes (within the MSS, 64 KiB on loopback) or memory is
// short, so a round may prove nothing; small frames make that rare.
func unseen(t *testing.T, r *RecvComm, rq *request, n int) bool {
	t.Helper()
	done := func() bool { return rq.state.Load() == reqDone }
	require.Eventually(t, func() bool {
		var v int
		var err error
		require.NoError(t, r.raw.Control(func(fd uintptr) { v, err = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }))
		require.NoError(t, err)
		return v >= n || done()
	}, 5*time.Second, time.Millisecond, "%d bytes buffered on the control socket", n)
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) {
		if done() {
			t.Logf("the reader goroutine read a frame of %d bytes with the mark raised", n)
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// awaitSleeper gives a Wait started on r up to 100 ms to count itself a
// sleeper (lowMark.sleeping), as it does right before it sleeps; it goes
// on either way, so that a Wait that sleeps without lowering the mark (a
// broken Wait) is caught by its hang, not here.
func awaitSleeper(r *RecvComm) {
	for deadline := time.Now().Add(100 * time.Millisecond); r.mark.sleepers.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(5 * time.Millisecond) // from sleeping to its select
}

// transferSize returns a random transfer size: inline, or in pieces.
func transferSize(rng *rand.Rand, pieces bool) int {
	if pieces {
		return MaxInline + 1 + rng.IntN(300000)
	}
	return 1 + rng.IntN(4096)
}

// frameBytes is what a transfer of n bytes puts on the control socket.
func frameBytes(n int) int {
	if n > MaxInline {
		return HeaderSize
	}
	return HeaderSize + n
}

// raiseBySpin makes a Wait that spins (for a second at most) receive a
// transfer with tag, sent while it spins, and checks that the mark stays
// raised once it is done.
func raiseBySpin(t *testing.T, rng *rand.Rand, s *SendComm, r *RecvComm, tag uint32) {
	t.Helper()
	futex.SetSpin(time.Second)
	want := randomBytes(rng, 1+rng.IntN(MaxInline))
	got := make([]byte, len(want))
	res := waitAsync(context.Background(), recvOn(t, r, got, tag))
	require.Eventually(t, func() bool { return raised(rcvLowat(t, r)) }, 5*time.Second, time.Millisecond, "SO_RCVLOWAT while a receive spins")
	_, err := waitFor(t, sendOn(t, s, want, tag))
	require.NoError(t, err)
	require.NoError(t, <-res)
	require.Equal(t, want, got)
	require.True(t, raised(rcvLowat(t, r)), "SO_RCVLOWAT once the spinning receive is done: it stays raised")
}

// TestBackToBackSpinsSetMarkOnce: Waits that spin on one receive after
// another raise the mark once, with the first, and leave it raised: N
// transfers cost one setsockopt, not 2N.
func TestBackToBackSpinsSetMarkOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, uint64(time.Now().UnixNano())))
	setSpin(t, time.Second)
	s, r := commPair(t, 2)
	sets := countSets(r)
	require.True(t, lowered(rcvLowat(t, r)))
	const n = 20
	for tag := range uint32(n) {
		raiseBySpin(t, rng, s, r, tag)
	}
	require.Equal(t, int32(1), sets.Load(), "setsockopt calls for %d back-to-back spinning Waits", n)
}

// TestSpinFailureEnds: a Wait whose context ends during its spin returns
// the context's error, and one during whose spin the peer closes returns
// network.ErrPeerClosed; neither is left counted as a sleeper.
func TestSpinFailureEnds(t *testing.T) {
	setSpin(t, 10*time.Second)
	s, r := commPair(t, 2)
	got := make([]byte, 64)
	rq := recvOn(t, r, got, 1)
	ctx, cancel := context.WithCancel(context.Background())
	res := waitAsync(ctx, rq)
	require.Eventually(t, func() bool { return raised(rcvLowat(t, r)) }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-res, context.Canceled)
	require.Zero(t, r.mark.sleepers.Load())

	res = waitAsync(context.Background(), rq) // still posted
	time.Sleep(5 * time.Millisecond)
	require.NoError(t, s.Close())
	require.ErrorIs(t, <-res, network.ErrPeerClosed)
	require.Zero(t, r.mark.sleepers.Load())
}

// TestNoSpinNoMark: with no spin time a Wait sleeps at once and the mark
// is never set.
func TestNoSpinNoMark(t *testing.T) {
	setSpin(t, 0)
	s, r := commPair(t, 2)
	sets := countSets(r)
	got := make([]byte, 100)
	res := waitAsync(context.Background(), recvOn(t, r, got, 1))
	time.Sleep(20 * time.Millisecond)
	require.True(t, lowered(rcvLowat(t, r)))
	sendOn(t, s, make([]byte, 100), 1)
	require.NoError(t, <-res)
	require.True(t, lowered(rcvLowat(t, r)))
	require.Zero(t, sets.Load())
}

// TestRaisedFrameWakesSleeper: a frame that arrives while the mark is
// raised and no one spins stays in the socket, unseen by the reader
// goroutine (its receive is not done 20 ms after the frame is buffered);
// once a goroutine about to sleep lowers the mark (lowMark.sleeping, as
// request.Wait does), the kernel signals the socket readable at once
// (tcp_set_rcvlowat) and the reader goroutine reads the frame and finishes
// the receive, which the test sees on its wake channel without Testing it.
// Were the mark not lowered, it would never finish. 5 rounds must prove
// it (see unseen), within 20.
func TestRaisedFrameWakesSleeper(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, uint64(time.Now().UnixNano())))
	setSpin(t, 0)
	s, r := commPair(t, 3)
	// A first transfer through the reader goroutine, so that it has started
	// and sleeps in the network poller before the rounds.
	res := waitAsync(context.Background(), recvOn(t, r, make([]byte, 8), 100))
	sendOn(t, s, make([]byte, 8), 100)
	require.NoError(t, <-res)
	proved := 0
	for round := 0; round < 20 && proved < 5; round++ {
		r.mark.spinning() // a spinner on another receive, done since
		require.True(t, raised(rcvLowat(t, r)))
		want := randomBytes(rng, transferSize(rng, false))
		got := make([]byte, len(want))
		tag := uint32(round)
		rq := recvOn(t, r, got, tag)
		_, err := waitFor(t, sendOn(t, s, want, tag))
		require.NoError(t, err)
		if unseen(t, r, rq, frameBytes(len(want))) {
			proved++
		}
		start := time.Now()
		r.mark.sleeping()
		select {
		case <-rq.wake:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the reader goroutine did not read the buffered frame once the mark was lowered", round)
		}
		t.Logf("round %d: %d bytes, read %v after the mark was lowered", round, len(want), time.Since(start))
		r.mark.awake()
		n, err := rq.spent()
		require.NoError(t, err)
		require.Equal(t, len(want), n)
		require.Equal(t, want, got, "round %d", round)
		require.True(t, lowered(rcvLowat(t, r)))
	}
	require.Equal(t, 5, proved, "rounds whose frame waited, unseen, for the mark to be lowered")
}

// TestBufferedFrameReachesLaterWait: a frame that arrived while the mark
// was raised (by a spinning Wait on an earlier transfer, done since) and no
// one spun is delivered to a later Wait of its receive: one that sleeps at
// once (no spin time, inline or in pieces), one whose spin time is over
// first, and one that reads it in its spin. In the "reader busy" cases the
// test holds the control stream's lock, as the reader goroutine does while
// it reads, until the Wait sleeps, so that its Test and spin cannot read
// the frame and it goes to sleep with the frame buffered: only its
// lowering of the mark, which makes the kernel signal the socket readable,
// wakes the reader goroutine to read it once the lock is free. Without the
// lowering those cases time out (3 s). Each case needs 3 rounds whose
// frame was unseen until the Wait (see unseen), within 10.
func TestBufferedFrameReachesLaterWait(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, uint64(time.Now().UnixNano())))
	cases := []struct {
		name       string
		spin       time.Duration
		pieces     bool
		readerBusy bool
	}{
		{"sleeps at once, reader busy", 0, false, true},
		{"sleeps at once, in pieces, reader busy", 0, true, true},
		{"spin over, reader busy", 2 * time.Millisecond, false, true},
		{"sleeps at once, its Test reads it", 0, false, false},
		{"spins and reads it", time.Second, false, false},
	}
	setSpin(t, 0)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, r := commPair(t, 3)
			tag := uint32(0)
			proved := 0
			for round := 0; round < 10 && proved < 3; round++ {
				raiseBySpin(t, rng, s, r, tag)
				tag++
				want := randomBytes(rng, transferSize(rng, c.pieces))
				got := make([]byte, len(want))
				rq := recvOn(t, r, got, tag)
				sq := sendOn(t, s, want, tag)
				tag++
				if unseen(t, r, rq, frameBytes(len(want))) {
					proved++
				}
				futex.SetSpin(c.spin)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				unlock := func() {}
				if c.readerBusy {
					r.rmu.Lock()
					unlock = sync.OnceFunc(r.rmu.Unlock)
					t.Cleanup(unlock) // before commPair's Close, should the test fail
				}
				res := waitAsync(ctx, rq)
				if c.readerBusy {
					awaitSleeper(r)
					select {
					case err := <-res:
						t.Fatalf("%s, round %d: the Wait returned (%v) while the control stream was locked", c.name, round, err)
					default:
					}
					unlock()
				}
				require.NoError(t, <-res, "%s, round %d", c.name, round)
				cancel()
				require.Equal(t, want, got, "%s, round %d", c.name, round)
				_, err := waitFor(t, sq)
				require.NoError(t, err)
				require.Zero(t, r.mark.sleepers.Load())
			}
			require.Equal(t, 3, proved, "%s: rounds whose frame was unseen until the Wait", c.name)
		})
	}
}

// TestSpinThenSleep: a Wait that spins and completes leaves the mark
// raised; the next Wait, on a transfer sent only once it sleeps (its spin
// time none or over; inline or in pieces), lowers it and is woken; none
// hangs (each is bounded by 3 s and fails rather than wait longer).
func TestSpinThenSleep(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, uint64(time.Now().UnixNano())))
	setSpin(t, 0)
	for _, spin := range []time.Duration{0, time.Millisecond} {
		for _, pieces := range []bool{false, true} {
			t.Run(fmt.Sprintf("spin=%v/pieces=%v", spin, pieces), func(t *testing.T) {
				s, r := commPair(t, 3)
				for round := range 4 {
					tag := uint32(2 * round)
					raiseBySpin(t, rng, s, r, tag)
					futex.SetSpin(spin)
					want := randomBytes(rng, transferSize(rng, pieces))
					got := make([]byte, len(want))
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
					res := waitAsync(ctx, recvOn(t, r, got, tag+1))
					awaitSleeper(r)
					sq := sendOn(t, s, want, tag+1)
					require.NoError(t, <-res, "round %d: %d bytes", round, len(want))
					cancel()
					require.Equal(t, want, got, "round %d", round)
					_, err := waitFor(t, sq)
					require.NoError(t, err)
					require.True(t, lowered(rcvLowat(t, r)), "round %d: SO_RCVLOWAT after a Wait slept", round)
				}
			})
		}
	}
}

// TestSpinnerDoesNotRaiseOverSleeper: while a Wait sleeps on a receive
// (having lowered the mark), a Wait that spins on an earlier receive of
// the connection leaves the mark low: raised, the sleeper's frame, which
// comes after the spinner's and which the spinner does not read, would
// wake no one. Once the sleeper is woken, the next spinner raises the mark
// again.
func TestSpinnerDoesNotRaiseOverSleeper(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, uint64(time.Now().UnixNano())))
	setSpin(t, 0)
	s, r := commPair(t, 2)
	raiseBySpin(t, rng, s, r, 0)
	first, second := make([]byte, 100), make([]byte, 200)
	q1, q2 := recvOn(t, r, first, 1), recvOn(t, r, second, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	futex.SetSpin(0)
	sleeper := waitAsync(ctx, q2)
	awaitSleeper(r)
	require.True(t, lowered(rcvLowat(t, r)), "SO_RCVLOWAT while a Wait sleeps")
	futex.SetSpin(10 * time.Second)
	spinner := waitAsync(ctx, q1)
	require.Never(t, func() bool { return raised(rcvLowat(t, r)) }, 50*time.Millisecond, time.Millisecond, "SO_RCVLOWAT raised by a spinner while a Wait sleeps")
	want1, want2 := randomBytes(rng, len(first)), randomBytes(rng, len(second))
	sendOn(t, s, want1, 1)
	require.NoError(t, <-spinner)
	time.Sleep(20 * time.Millisecond) // the spinner's frame alone: the sleeper still sleeps
	sendOn(t, s, want2, 2)
	require.NoError(t, <-sleeper, "the sleeping Wait, whose frame came after the spinner's")
	require.Equal(t, want1, first)
	require.Equal(t, want2, second)
	require.Zero(t, r.mark.sleepers.Load())
	raiseBySpin(t, rng, s, r, 3)
}

// TestConcurrentSpinners: several goroutines Wait at once on receives of
// one connection, spinning for random times (none, a microsecond, tens of
// microseconds, a millisecond), while the sender sends random sizes, inline
// and in pieces, of random bytes, after random pauses, so that frames
// arrive before, during and after the spins and while Waits raise the mark
// and others going to sleep lower it: every transfer arrives whole (every
// byte checked), within 10 s, and no Wait is left counted as a sleeper.
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
			res[i] = waitAsync(ctx, recvOn(t, r, recvs[i], uint32(round*8+i)))
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
		require.Zero(t, r.mark.sleepers.Load(), "round %d", round)
	}
}

// TestPollOnlySpin: after PollOnly, spinning Waits leave the mark raised,
// and so does a Wait that sleeps.
func TestPollOnlySpin(t *testing.T) {
	setSpin(t, 10*time.Second)
	s, r := commPair(t, 2)
	require.NoError(t, r.PollOnly())
	for tag := range uint32(3) {
		got := make([]byte, 64)
		res := waitAsync(context.Background(), recvOn(t, r, got, tag))
		time.Sleep(5 * time.Millisecond)
		sendOn(t, s, make([]byte, 64), tag)
		require.NoError(t, <-res)
		require.True(t, raised(rcvLowat(t, r)), "SO_RCVLOWAT after a spin, with PollOnly")
	}
	r.mark.sleeping()
	r.mark.awake()
	require.True(t, raised(rcvLowat(t, r)), "SO_RCVLOWAT after a sleeper, with PollOnly")
}

// TestFailedLoweringFailsConnection: where lowering the mark fails on an
// open socket (injected here), the Wait that was going to sleep on it
// fails at once with gccl.ErrSystem, the connection with it, rather than
// sleep until its deadline with the frame unseen.
func TestFailedLoweringFailsConnection(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, uint64(time.Now().UnixNano())))
	setSpin(t, 0)
	s, r := commPair(t, 2)
	raiseBySpin(t, rng, s, r, 0)
	set := r.mark.setF
	r.mark.setF = func(fd uintptr) {
		if r.mark.val == 1 {
			r.mark.err = syscall.ENOPROTOOPT
			return
		}
		set(fd)
	}
	futex.SetSpin(0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := <-waitAsync(ctx, recvOn(t, r, make([]byte, 10), 1))
	require.ErrorIs(t, err, gccl.ErrSystem)
	require.ErrorIs(t, err, syscall.ENOPROTOOPT)
	require.ErrorIs(t, r.broken(), gccl.ErrSystem)
}

// TestMarkAllocatesNothing: raising and lowering the mark, as a spin and a
// sleep do, allocates nothing.
func TestMarkAllocatesNothing(t *testing.T) {
	_, r := commPair(t, 2)
	allocs := testing.AllocsPerRun(100, func() { r.mark.spinning(); r.mark.sleeping(); r.mark.awake() })
	require.Zero(t, allocs)
	require.True(t, lowered(rcvLowat(t, r)))
}
