package accept

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flaky is a listener whose Accept fails with EMFILE the first fails times.
type flaky struct {
	net.Listener
	fails atomic.Int32
}

func (f *flaky) Accept() (net.Conn, error) {
	if f.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return f.Listener.Accept()
}

func TestServeRidesOutEMFILE(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &flaky{Listener: ln}
	f.fails.Store(12)
	var slept []time.Duration
	served := make(chan struct{}, 1)
	result := make(chan int)
	go func() {
		result <- Serve(f, Config{MaxPending: 4, Sleep: func(d time.Duration) { slept = append(slept, d) }},
			func(c net.Conn, done func()) { _ = c.Close(); served <- struct{}{} })
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("the listener stopped after a burst of EMFILE")
	}
	require.NoError(t, ln.Close())
	assert.Equal(t, 12, <-result, "accept errors ridden out")
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000, 1000}
	for i := range want {
		want[i] *= time.Millisecond
	}
	assert.Equal(t, want, slept, "backoff 5 ms doubling to 1 s")
}

func TestServeBoundsPending(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	const limit, conns = 3, 10
	var mu sync.Mutex
	inFlight, peak := 0, 0
	release := make(chan struct{})
	var handled sync.WaitGroup
	handled.Add(conns)
	go Serve(ln, Config{MaxPending: limit}, func(c net.Conn, done func()) {
		defer handled.Done()
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
		done()
		done() // idempotent
		_ = c.Close()
	})
	for range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	assert.Equal(t, limit, inFlight, "handshakes beyond MaxPending wait")
	mu.Unlock()
	close(release)
	handled.Wait()
	assert.Equal(t, limit, peak)
	require.NoError(t, ln.Close())
}
