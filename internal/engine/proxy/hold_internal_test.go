package proxy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHoldHot: a held proxy polls hot long after any Kick or progress;
// each release counts once, and the proxy may sleep again once every hold
// is released.
func TestHoldHot(t *testing.T) {
	p := &Proxy{epoch: time.Now(), spin: time.Millisecond}
	idle := int64(-p.spin) - 1 // no Kick, no progress
	p.kicked.Store(idle)
	now := int64(10 * time.Second)
	assert.False(t, p.hot(now, idle, false), "idle, not held")
	assert.True(t, p.hot(now, idle, true), "busy")
	release1, release2 := p.Hold(), p.Hold()
	assert.True(t, p.hot(now, idle, false), "held twice")
	release1()
	release1()
	assert.True(t, p.hot(now, idle, false), "one hold left: the double release counted once")
	release2()
	assert.False(t, p.hot(now, idle, false), "every hold released")
	assert.Equal(t, int32(0), p.holds.Load())
}

// waitSleeps waits until p's goroutine has slept n more times than from.
func waitSleeps(t *testing.T, p *Proxy, from, n int64, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for p.sleeps.Load() < from+n {
		require.True(t, time.Now().Before(deadline), "%s: the proxy slept %d times, want %d more", what, p.sleeps.Load()-from, n)
		time.Sleep(100 * time.Microsecond)
	}
}

// TestHoldNoSleeps: the goroutine of a proxy that never spins sleeps
// between passes until it is held, sleeps no more while held (at most the
// sleep it had decided on when Hold came), and sleeps again once
// released.
func TestHoldNoSleeps(t *testing.T) {
	p := New(Config{Spin: -1})
	defer p.Close()
	waitSleeps(t, p, 0, 3, "not held")
	release := p.Hold()
	held := p.sleeps.Load()
	time.Sleep(20 * time.Millisecond) // unheld, it would sleep at least every millisecond
	assert.LessOrEqual(t, p.sleeps.Load()-held, int64(1), "sleeps while held")
	release()
	release()
	assert.Equal(t, int32(0), p.holds.Load(), "holds after a double release")
	waitSleeps(t, p, p.sleeps.Load(), 3, "released")
}

// TestCloseHeld: Close ends a held proxy's goroutine; releasing the hold
// later, and holding a closed proxy, are harmless.
func TestCloseHeld(t *testing.T) {
	p := New(Config{})
	release := p.Hold()
	require.NoError(t, p.Close())
	select {
	case <-p.done:
	default:
		t.Fatal("Close returned with the goroutine still running")
	}
	release()
	p.Hold()()
	assert.Equal(t, int32(0), p.holds.Load())
	require.NoError(t, p.Close())
}
