package progress

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counter is a hook that counts its calls, blocking ones apart.
type counter struct{ all, blocking atomic.Int64 }

func (c *counter) hook(blocking bool) {
	c.all.Add(1)
	if blocking {
		c.blocking.Add(1)
	}
}

func TestHookRunsOnlyWhileWaiting(t *testing.T) {
	var c counter
	remove := Install(c.hook)
	defer remove()
	time.Sleep(20 * Interval)
	assert.Zero(t, c.all.Load(), "no wait under way: the hook must not run")

	leave := Enter(true)
	require.Eventually(t, func() bool { return c.blocking.Load() >= 3 }, 5*time.Second, Interval)
	leave()
	leave() // a second call is harmless
	time.Sleep(10 * Interval)
	n := c.all.Load()
	time.Sleep(20 * Interval)
	assert.Equal(t, n, c.all.Load(), "the hook kept running after the wait ended")
}

func TestBackgroundWaitsAreNotBlocking(t *testing.T) {
	var c counter
	remove := Install(c.hook)
	defer remove()
	leave := Enter(false)
	require.Eventually(t, func() bool { return c.all.Load() >= 3 }, 5*time.Second, Interval)
	leave()
	assert.Zero(t, c.blocking.Load(), "a background wait reported as blocking")
}

func TestHookIsRateLimited(t *testing.T) {
	var c counter
	remove := Install(c.hook)
	defer remove()
	leaves := make([]func(), 8) // many waits at once still drive one hook
	for i := range leaves {
		leaves[i] = Enter(i%2 == 0)
	}
	const span = 100 * time.Millisecond
	time.Sleep(span)
	for _, leave := range leaves {
		leave()
	}
	n := c.all.Load()
	assert.LessOrEqual(t, n, int64(span/Interval)+2, "more calls than one per Interval")
	assert.Positive(t, n)
}

func TestRemoveStopsTheHook(t *testing.T) {
	var old, cur counter
	removeOld := Install(old.hook)
	remove := Install(cur.hook)
	removeOld() // stale: cur stays installed
	leave := Enter(true)
	defer leave()
	require.Eventually(t, func() bool { return cur.all.Load() >= 2 }, 5*time.Second, Interval)
	remove()
	time.Sleep(5 * Interval)
	n := cur.all.Load()
	time.Sleep(20 * Interval)
	assert.Equal(t, n, cur.all.Load(), "the hook ran after its removal")
	assert.Zero(t, old.all.Load(), "the replaced hook ran")
}

func TestNoHookNoDriver(t *testing.T) {
	leave := Enter(true)
	defer leave()
	st.mu.Lock()
	running := st.running
	st.mu.Unlock()
	assert.False(t, running)
}
