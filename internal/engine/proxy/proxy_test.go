package proxy_test

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pair is one connection of a test: its two FIFOs and what it carries.
type pair struct {
	from, to   int
	send, recv proxy.FIFO
	st         stream
}

// connectAll connects, on each channel, rank 0 to rank 1 and rank 1 to
// rank 0, channel ch with slots of slotBytes[ch].
func connectAll(t *testing.T, w *world, slotBytes ...int) []pair {
	var ps []pair
	for ch, sb := range slotBytes {
		for _, d := range [][2]int{{0, 1}, {1, 0}} {
			s, r := w.connect(t, d[0], d[1], ch, sb)
			ps = append(ps, pair{d[0], d[1], s, r, stream{seed: uint64(100*ch + 10*d[0] + 1), slotBytes: sb}})
		}
	}
	return ps
}

// run launches count slots on every pair (a sending and a receiving
// kernel each) and waits for them.
func run(w *world, ps []pair, count int, stop *atomic.Bool) error {
	var fns []func() error
	for _, p := range ps {
		fns = append(fns,
			func() error { return w.gpu(p.from, stop).send(p.send, p.st, count) },
			func() error { return w.gpu(p.to, stop).recv(p.recv, p.st, count) })
	}
	return launch(fns...)()
}

// TestTransfers: two channels, both directions, slots inline in the
// socket provider's control frames (64 KiB) and cut into pieces (256 KiB),
// random sizes from 0 to the full slot; every byte is checked, and at the
// end every FIFO's counters agree.
func TestTransfers(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, nil)
	ps := connectAll(t, w, 64<<10, 256<<10)
	count := 300
	if testing.Short() || raceEnabled {
		count = 100
	}
	w.kick()
	require.NoError(t, run(w, ps, count, nil))
	for _, p := range ps {
		assert.Equal(t, uint64(count), p.send.Tail())
		assert.Equal(t, uint64(count), p.recv.Tail())
		assert.Equal(t, uint64(count), p.recv.Head())
		assert.Eventually(t, func() bool { return p.send.Head() == uint64(count) }, wait, time.Millisecond)
	}
	for r := range 2 {
		assert.NoError(t, w.ranks[r].p.Err())
		assert.Zero(t, w.statusOf(r))
	}
}

// TestLaunches: counters continue across launches, whose kernels read
// their position from the FIFOs; launches after the proxies went idle and
// with no Kick (graph replays) are served too.
func TestLaunches(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, func(int) proxy.Config { return proxy.Config{Spin: 200 * time.Microsecond} })
	ps := connectAll(t, w, 16<<10, 256<<10)
	total := 0
	for i, n := range []int{50, 1, 37, 8, 0, 64} {
		if i%2 == 0 {
			w.kick()
		} else {
			time.Sleep(5 * time.Millisecond) // the proxies sleep: only the counters tell them
		}
		require.NoError(t, run(w, ps, n, nil), "launch %d", i)
		total += n
		for _, p := range ps {
			require.Equal(t, uint64(total), p.recv.Head(), "launch %d", i)
		}
	}
	for r := range 2 {
		assert.NoError(t, w.ranks[r].p.Err())
	}
}

// TestWaitModes: transfers and launches with and without Kick, with the
// proxies crowded (more than half as many as Ps: they sleep on Go timers and
// give their Ps back) and uncrowded (they spin and sleep on futexes).
func TestWaitModes(t *testing.T) {
	for _, procs := range []int{1, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			noLeaks(t)
			w := newWorld(t, 2, func(int) proxy.Config { return proxy.Config{Spin: 300 * time.Microsecond} })
			ps := connectAll(t, w, 32<<10)
			total := 0
			for i, n := range []int{40, 9, 40} {
				if i != 1 {
					w.kick()
				} else {
					time.Sleep(3 * time.Millisecond)
				}
				require.NoError(t, run(w, ps, n, nil), "launch %d", i)
				total += n
				for _, p := range ps {
					require.Equal(t, uint64(total), p.recv.Head(), "launch %d", i)
				}
			}
		})
	}
}

// TestAddWhileRunning: a connection added while the proxy serves others
// (point-to-point connections are made on first use) is served too.
func TestAddWhileRunning(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, nil)
	ps := connectAll(t, w, 8<<10)
	done := make(chan error, 1)
	go func() { done <- run(w, ps, 200, nil) }()
	s, r := w.connect(t, 0, 1, 5, 4096)
	st := stream{seed: 55, slotBytes: 4096}
	require.NoError(t, launch(
		func() error { return w.gpu(0, nil).send(s, st, 40) },
		func() error { return w.gpu(1, nil).recv(r, st, 40) })())
	require.NoError(t, <-done)
}

// TestPeerCloses: a peer whose proxy closes mid-stream, kernels still sending to it,
// fails the survivor's proxy with a typed error naming the peer, sets its
// status word to StatusNetwork, and its kernels stop.
func TestPeerCloses(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, func(int) proxy.Config { return proxy.Config{Timeout: 10 * time.Second} })
	ps := connectAll(t, w, 128<<10)
	var stop1 atomic.Bool // rank 1's kernels
	var fns []func() error
	stopOf := func(r int) *atomic.Bool {
		if r == 1 {
			return &stop1
		}
		return nil
	}
	for _, p := range ps {
		fns = append(fns,
			func() error { return w.gpu(p.from, stopOf(p.from)).send(p.send, p.st, 1<<30) },
			func() error { return w.gpu(p.to, stopOf(p.to)).recv(p.recv, p.st, 1<<30) })
	}
	w.kick()
	kernelsDone := launch(fns...)
	require.Eventually(t, func() bool { return ps[0].recv.Head() > 20 && ps[1].recv.Head() > 20 }, wait, time.Millisecond)
	stop1.Store(true)
	start := time.Now()
	require.NoError(t, w.ranks[1].p.Close())
	err := w.waitErr(t, 0, 5*time.Second)
	t.Logf("rank 0 failed %v after its peer closed: %v", time.Since(start), err)
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge), "%v is not a *gccl.Error", err)
	assert.ErrorIs(t, err, gccl.ErrRemote)
	assert.Contains(t, err.Error(), "peer 1 channel 0")
	assert.Equal(t, uint32(kernels.StatusNetwork), w.statusOf(0))
	kerr := kernelsDone()
	assert.ErrorIs(t, kerr, errStatus, "rank 0's kernels stop on the status word")
	assert.NotErrorIs(t, kerr, errHung)
}

// TestNoProgress: a sending connection whose peer takes nothing (its
// receiving end is open but nobody posts receives) fails with
// gccl.ErrTimeout after Config.Timeout, and the status word says so.
func TestNoProgress(t *testing.T) {
	noLeaks(t)
	const timeout = 300 * time.Millisecond
	w := newWorld(t, 2, func(int) proxy.Config { return proxy.Config{Timeout: timeout} })
	sc, rc := w.dial(t, 0, 1, 0)
	t.Cleanup(func() { _ = rc.Close() })
	f := w.fifo(t, 512<<10)
	require.NoError(t, w.ranks[0].p.AddSend(f, sc, proxy.Label{Peer: 1, Channel: 0}))
	start := time.Now()
	kerr := launch(func() error {
		return w.gpu(0, nil).send(f, stream{seed: 9, slotBytes: 512 << 10}, 1<<30)
	})
	err := w.waitErr(t, 0, 30*time.Second)
	t.Logf("failed after %v and %d slots sent: %v", time.Since(start), f.Head(), err)
	assert.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Contains(t, err.Error(), "peer 1 channel 0 send")
	assert.GreaterOrEqual(t, time.Since(start), timeout)
	assert.Equal(t, uint32(kernels.StatusNetwork), w.statusOf(0))
	assert.ErrorIs(t, kerr(), errStatus)
}

// TestCloseInFlight: closing both proxies while every connection has
// transfers in flight returns promptly and leaves nothing behind.
func TestCloseInFlight(t *testing.T) {
	noLeaks(t)
	w := newWorld(t, 2, nil)
	ps := connectAll(t, w, 64<<10, 512<<10)
	var stop atomic.Bool
	kerr := make(chan error, 1)
	w.kick()
	go func() { kerr <- run(w, ps, 1<<30, &stop) }()
	require.Eventually(t, func() bool { return ps[3].recv.Head() > 10 }, wait, time.Millisecond)
	closed := make(chan error, 2)
	start := time.Now()
	for _, rk := range w.ranks {
		go func() { closed <- rk.p.Close() }()
	}
	for range 2 {
		select {
		case err := <-closed:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Close hangs with transfers in flight")
		}
	}
	t.Logf("both proxies closed in %v", time.Since(start))
	stop.Store(true)
	assert.ErrorIs(t, <-kerr, errStopped)
	// (a proxy may have seen its peer's Close before its own: not checked)
}

// TestStats: after Close every connection reports the slots and bytes it
// carried (the streams' random sizes, summed independently), a sending
// connection a time on the wire, and the INFO log says the same.
func TestStats(t *testing.T) {
	noLeaks(t)
	var logs [2]gccltest.SyncBuffer
	w := newWorld(t, 2, func(r int) proxy.Config {
		return proxy.Config{Logger: slog.New(slog.NewTextHandler(&logs[r], &slog.HandlerOptions{Level: slog.LevelInfo}))}
	})
	ps := connectAll(t, w, 32<<10)
	for r := range 2 {
		assert.Nil(t, w.ranks[r].p.Stats(), "rank %d: stats before Close", r)
	}
	count := 60
	w.kick()
	require.NoError(t, run(w, ps, count, nil))
	for _, p := range ps {
		require.Eventually(t, func() bool { return p.send.Head() == uint64(count) }, wait, time.Millisecond)
	}
	for r := range 2 {
		require.NoError(t, w.ranks[r].p.Close())
	}
	for _, p := range ps {
		var bytes uint64
		for s := range uint64(count) {
			bytes += uint64(p.st.size(s))
		}
		for _, end := range []struct {
			rank, peer int
			send       bool
		}{{p.from, p.to, true}, {p.to, p.from, false}} {
			var got []proxy.ConnStats
			for _, s := range w.ranks[end.rank].p.Stats() {
				if s.Send == end.send && s.Label.Peer == end.peer {
					got = append(got, s)
				}
			}
			require.Len(t, got, 1, "rank %d send=%v peer %d", end.rank, end.send, end.peer)
			s := got[0]
			assert.Equal(t, uint64(count), s.Slots, "rank %d send=%v", end.rank, end.send)
			assert.Equal(t, bytes, s.Bytes, "rank %d send=%v", end.rank, end.send)
			assert.LessOrEqual(t, s.Overlapped, s.Slots)
			if end.send {
				assert.Positive(t, s.Wire, "rank %d: a sending connection that carried %d bytes spent no time on the wire", end.rank, bytes)
			} else {
				assert.Zero(t, s.Wire)
			}
		}
	}
	for r := range 2 {
		out := logs[r].String()
		assert.Contains(t, out, "proxy send connection", "rank %d", r)
		assert.Contains(t, out, "proxy receive connection", "rank %d", r)
		assert.Contains(t, out, fmt.Sprintf("slots=%d", count), "rank %d", r)
	}
}

// TestKernelFailureSpreads: a kernel failure in a rank's status word
// (here StatusBadUsage: the ranks launched different operations) stops
// that rank's proxy with the kernel's typed error, which reaches the
// sender of its receiving connection: the peer's proxy fails with it at
// once, sets its status word to StatusNetwork, and the peer's kernels stop,
// instead of waiting for their deadline.
func TestKernelFailureSpreads(t *testing.T) {
	noLeaks(t)
	const timeout = 20 * time.Second
	w := newWorld(t, 2, func(int) proxy.Config { return proxy.Config{Timeout: timeout} })
	send, recv := w.connect(t, 0, 1, 0, 128<<10)
	st := stream{seed: 3, slotBytes: 128 << 10}
	w.kick()
	kernelsDone := launch(
		func() error { return w.gpu(0, nil).send(send, st, 1<<30) },
		func() error { return w.gpu(1, nil).recv(recv, st, 1<<30) })
	require.Eventually(t, func() bool { return recv.Head() > 4 }, wait, time.Millisecond)
	start := time.Now()
	atomic.StoreUint32(&w.ranks[1].status, kernels.StatusBadUsage)
	err1 := w.waitErr(t, 1, 5*time.Second)
	assert.ErrorIs(t, err1, gccl.ErrInvalidUsage)
	assert.Contains(t, err1.Error(), "GPU kernel stopped")
	err0 := w.waitErr(t, 0, 5*time.Second)
	t.Logf("rank 0 failed %v after rank 1's kernel: %v", time.Since(start), err0)
	assert.ErrorIs(t, err0, gccl.ErrInvalidUsage, "the kernel's error reaches the peer")
	assert.Less(t, time.Since(start), timeout/4)
	assert.Equal(t, uint32(kernels.StatusNetwork), w.statusOf(0))
	assert.Equal(t, uint32(kernels.StatusBadUsage), w.statusOf(1), "the kernel's own status stays")
	kerr := kernelsDone()
	assert.ErrorIs(t, kerr, errStatus, "the kernels stop on the status words")
	assert.NotErrorIs(t, kerr, errHung)
}
