package engine

import (
	"context"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// turnEngine is just enough of an engine for Launch.WaitTurn: the ticket
// lock, the abort context and the timeout.
func turnEngine(timeout time.Duration) *Engine {
	e := &Engine{timeout: timeout}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.launches.New = func() any { return &Launch{e: e} }
	return e
}

// take is a launch of e with e's next ticket.
func (e *Engine) take() *Launch {
	l := e.newLaunch(0, 0)
	l.ticket = e.order.take()
	return l
}

// waitTurn is l.WaitTurn with no bound of the caller's.
func waitTurn(l *Launch) error { return l.WaitTurn(context.Background()) }

// TestWaitTurn: the served turn passes at once without allocating; a
// later one waits for release, and otherwise ends with the timeout, the
// engine's abort or its async error, each as its own typed error.
func TestWaitTurn(t *testing.T) {
	e := turnEngine(10 * time.Second)
	first, second := e.take(), e.take()
	require.NoError(t, waitTurn(first))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if err := waitTurn(first); err != nil {
			panic(err)
		}
	}))
	assert.False(t, e.order.ready(second.ticket))
	go func() { time.Sleep(20 * time.Millisecond); e.order.release() }()
	start := time.Now()
	require.NoError(t, waitTurn(second))
	assert.GreaterOrEqual(t, time.Since(start), 15*time.Millisecond, "waited for the release")

	short := turnEngine(30 * time.Millisecond)
	short.order.take()
	gccltest.RequireCode(t, waitTurn(short.take()), gccl.TimeoutError)

	aborted := turnEngine(10 * time.Second)
	aborted.order.take()
	go func() { time.Sleep(20 * time.Millisecond); aborted.cancel() }()
	start = time.Now()
	gccltest.RequireCode(t, waitTurn(aborted.take()), gccl.RemoteError)
	assert.Less(t, time.Since(start), 5*time.Second)
	// Already aborted: a new wait fails at once rather than after the timeout.
	gccltest.RequireCode(t, waitTurn(aborted.take()), gccl.RemoteError)

	broken := turnEngine(10 * time.Second)
	broken.order.take()
	broken.setAsyncError(gccl.Errorf(gccl.SystemError, "x", "peer gone"))
	gccltest.RequireCode(t, waitTurn(broken.take()), gccl.SystemError)
}
