package futex

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReachedWraps(t *testing.T) {
	assert.True(t, Reached(5, 5))
	assert.True(t, Reached(6, 5))
	assert.False(t, Reached(4, 5))
	assert.True(t, Reached(1, 0xFFFFFFFF), "1 is past the wrap")
	assert.False(t, Reached(0xFFFFFFFF, 1))
}

// TestAwait: a waiter that went to sleep is woken by Advance long before
// its nap would end it many times over, and check ends a wait with its error.
func TestAwait(t *testing.T) {
	var seq, waiters uint32
	c := Counter{Seq: &seq, Waiters: &waiters}
	done := make(chan error, 1)
	go func() { done <- c.Await(3, func() error { return nil }) }()
	time.Sleep(50 * time.Millisecond) // the waiter sleeps on the futex by now
	c.Advance(2)
	select {
	case <-done:
		t.Fatal("Await returned before the counter reached its target")
	case <-time.After(20 * time.Millisecond):
	}
	c.Advance(3)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Await was not woken")
	}
	assert.Zero(t, waiters, "no sleeper left counted")

	stop := errors.New("peer failed")
	err := c.Await(10, func() error { return stop })
	assert.ErrorIs(t, err, stop)
}
