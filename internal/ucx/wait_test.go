package ucx

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sleepFor runs w.Wait(d) in a goroutine; the channel gets how long it
// took.
func sleepFor(w *Worker, d time.Duration) <-chan time.Duration {
	took := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		_ = w.Wait(d)
		took <- time.Since(start)
	}()
	return took
}

// talkingPair is a connected pair whose endpoint is wired up: the first
// message, for which b progressed as long as it took (not one Wait), has
// gone from ep to b. buf and got are an 8-byte message and its receive
// buffer.
func talkingPair(t *testing.T) (b *Worker, ep *Endpoint, buf, got []byte) {
	t.Helper()
	_, b, ep = pair(t, tcpContext(t))
	buf, got = []byte("wire-up!"), make([]byte, 8)
	r, err := b.Recv(ptr(got), len(got), 99, nil, false)
	require.NoError(t, err)
	s, err := ep.Send(ptr(buf), len(buf), 99, nil, false)
	require.NoError(t, err)
	waitBoth(t, s, r)
	s.Release()
	r.Release()
	return b, ep, buf, got
}

// sentTo posts a receive of got on b with tag, sends buf to it from ep
// and waits for the send; the receive is the caller's.
func sentTo(t *testing.T, b *Worker, ep *Endpoint, buf, got []byte, tag uint64) *Request {
	t.Helper()
	r, err := b.Recv(ptr(got), len(got), tag, nil, false)
	require.NoError(t, err)
	s, err := ep.Send(ptr(buf), len(buf), tag, nil, false)
	require.NoError(t, err)
	require.NoError(t, s.Wait(10*time.Second))
	s.Release()
	return r
}

// TestWaitWakesOnMessage: a Wait asleep on the receiver's events (in the
// netpoller) wakes when a message arrives, every time, long before its
// 10 s: an event the edge-triggered netpoller missed would sleep it out.
func TestWaitWakesOnMessage(t *testing.T) {
	b, ep, buf, got := talkingPair(t)
	for i := range 20 {
		r, err := b.Recv(ptr(got), len(got), uint64(i), nil, false)
		require.NoError(t, err)
		took := sleepFor(b, 10*time.Second)
		time.Sleep(20 * time.Millisecond) // asleep by now
		s, err := ep.Send(ptr(buf), len(buf), uint64(i), nil, false)
		require.NoError(t, err)
		require.NoError(t, s.Wait(10*time.Second))
		s.Release()
		select {
		case d := <-took:
			assert.Less(t, d, 2*time.Second)
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d: the Wait slept on after it arrived", i)
		}
		require.NoError(t, r.Wait(10*time.Second))
		r.Release()
	}
}

// TestWaitWakesOnSignal: Signal (and so Hurry) wakes a Wait asleep in
// the netpoller and one asleep in poll beside it.
func TestWaitWakesOnSignal(t *testing.T) {
	c := tcpContext(t)
	w := newWorker(t, c)
	first := sleepFor(w, 10*time.Second)
	time.Sleep(20 * time.Millisecond)
	second := sleepFor(w, 10*time.Second) // the netpoller's place is taken: poll
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, w.Signal())
	for _, took := range []<-chan time.Duration{first, second} {
		select {
		case d := <-took:
			assert.Less(t, d, 2*time.Second)
		case <-time.After(5 * time.Second):
			t.Fatal("a Wait slept on after a Signal")
		}
	}
}

// TestWaitsKeepTheirDeadlines: a short Wait beside a long one returns
// after its own d, not the long one's.
func TestWaitsKeepTheirDeadlines(t *testing.T) {
	c := tcpContext(t)
	w := newWorker(t, c)
	long := sleepFor(w, 3*time.Second)
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	require.NoError(t, w.Wait(50*time.Millisecond))
	assert.Less(t, time.Since(start), time.Second)
	require.NoError(t, w.Signal())
	<-long
	// Alone, a Wait sleeps its d out in the netpoller too (once the
	// signal is spent: the first arm after it may report it).
	_ = w.Wait(time.Millisecond)
	start = time.Now()
	require.NoError(t, w.Wait(50*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)
	assert.Less(t, time.Since(start), time.Second)
}

// TestCloseEndsWait: Close wakes a Wait asleep in the netpoller, which
// then says the worker is closed.
func TestCloseEndsWait(t *testing.T) {
	c := tcpContext(t)
	w, err := c.NewWorker()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- w.Wait(10 * time.Second) }()
	time.Sleep(20 * time.Millisecond)
	w.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a Wait slept on after Close")
	}
	require.Error(t, w.Wait(time.Millisecond), "a closed worker's Wait")
}

// TestWaitReturnsWhatItsProgressCompleted: a message that arrived while
// nobody progressed the receiver is handled by the progress a Wait does
// before it sleeps; that Wait returns at once (its caller's request may
// be done now) instead of sleeping out its d over it.
func TestWaitReturnsWhatItsProgressCompleted(t *testing.T) {
	b, ep, buf, got := talkingPair(t)
	for i := range 10 {
		r := sentTo(t, b, ep, buf, got, uint64(i))
		time.Sleep(20 * time.Millisecond) // arrived, not handled
		start := time.Now()
		require.NoError(t, b.Wait(5*time.Second))
		assert.Less(t, time.Since(start), time.Second, "message %d", i)
		require.NoError(t, r.Wait(10*time.Second))
		r.Release()
	}
}

// TestTestAllocatesNothing: testing a pending request, the per-message
// path's most frequent call, allocates nothing (no pointer passed to C).
func TestTestAllocatesNothing(t *testing.T) {
	c := tcpContext(t)
	w := newWorker(t, c)
	buf := make([]byte, 8)
	r, err := w.Recv(ptr(buf), len(buf), 1, nil, false)
	require.NoError(t, err)
	defer r.Release()
	allocs := testing.AllocsPerRun(100, func() {
		if done, _, _ := r.Test(); done {
			t.Fatal("a receive nobody sends to is done")
		}
	})
	assert.Zero(t, allocs)
}

// TestSleepSeesCompletion: a receive that another goroutine's progress
// completed (the events consumed, none left to wake a sleeper) does not
// sleep its caller's Sleep out, while a Wait would.
func TestSleepSeesCompletion(t *testing.T) {
	b, ep, buf, got := talkingPair(t)
	for i := range 5 {
		r := sentTo(t, b, ep, buf, got, uint64(i))
		require.Eventually(t, func() bool {
			b.Progress() // as the connection's progress goroutine would
			r.w.mu.Lock()
			defer r.w.mu.Unlock()
			_, s := cRecvStatus(r.h)
			return s != InProgress
		}, 5*time.Second, time.Millisecond)
		start := time.Now()
		require.NoError(t, r.Sleep(5*time.Second))
		assert.Less(t, time.Since(start), time.Second, "message %d", i)
		done, _, err := r.Test()
		require.NoError(t, err)
		require.True(t, done)
		r.Release()
	}
}
