package net

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpinLetsReadiedGoroutineRun: a Wait that spins yields its P, so the
// goroutine its caller readied just before (here the sender, which waits
// in the caller's P on one P) runs during the spin and the transfer
// completes in it, not only once the runtime preempts the spinner (10 ms)
// or the spin time ends (1 s here). The host backend's runner hands each
// long message to its sender goroutine and then waits for the peer's
// answer so; without the yield that wait spun out the spin time first.
func TestSpinLetsReadiedGoroutineRun(t *testing.T) {
	futex.SetSpin(time.Second)
	t.Cleanup(func() { futex.SetSpin(-1) })
	procs := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	s, r := commPair(t, 2)
	sb, rb := make([]byte, 4096), make([]byte, 4096)
	for i := range sb {
		sb[i] = byte(i*7 + 1)
	}
	sm, err := s.Register(network.HostRegion(sb))
	require.NoError(t, err)
	rm, err := r.Register(network.HostRegion(rb))
	require.NoError(t, err)
	best := time.Hour
	for range 5 { // the best of 5: a loaded machine may hold any one thread back
		clear(rb)
		rq, err := r.Irecv(network.HostRegion(rb), rm, 0)
		require.NoError(t, err)
		sent := make(chan error, 1)
		start := time.Now()
		go func() { // readied into this P's runnext
			sq, err := s.Isend(network.HostRegion(sb), sm, 0)
			if err == nil {
				_, err = waitFor(t, sq)
			}
			sent <- err
		}()
		n, err := waitFor(t, rq)
		best = min(best, time.Since(start))
		require.NoError(t, err)
		require.NoError(t, <-sent)
		require.Equal(t, len(sb), n)
		require.True(t, bytes.Equal(sb, rb), "received bytes differ from those sent")
	}
	assert.Less(t, best, 5*time.Millisecond, "the spinning Wait kept its P from the sender it readied")
}
