package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// turnEngine is just enough of an engine for waitTurn: the ticket lock,
// the abort context and the timeout.
func turnEngine(timeout time.Duration) *Engine {
	e := &Engine{timeout: timeout}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e
}

func requireCode(t *testing.T, err error, code gccl.Result) {
	t.Helper()
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge), "%T is not a *gccl.Error: %v", err, err)
	require.Equal(t, code, ge.Code, "%v", err)
}

// TestWaitTurn: the served ticket passes at once without allocating; a
// later one waits for release, and otherwise ends with the timeout, the
// engine's abort or its async error, each as its own typed error.
func TestWaitTurn(t *testing.T) {
	e := turnEngine(10 * time.Second)
	first, second := e.order.take(), e.order.take()
	require.NoError(t, e.waitTurn(first))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if err := e.waitTurn(first); err != nil {
			panic(err)
		}
	}))
	assert.False(t, e.order.ready(second))
	go func() { time.Sleep(20 * time.Millisecond); e.order.release() }()
	start := time.Now()
	require.NoError(t, e.waitTurn(second))
	assert.GreaterOrEqual(t, time.Since(start), 15*time.Millisecond, "waited for the release")

	short := turnEngine(30 * time.Millisecond)
	short.order.take()
	requireCode(t, short.waitTurn(short.order.take()), gccl.TimeoutError)

	aborted := turnEngine(10 * time.Second)
	aborted.order.take()
	go func() { time.Sleep(20 * time.Millisecond); aborted.cancel() }()
	start = time.Now()
	requireCode(t, aborted.waitTurn(aborted.order.take()), gccl.RemoteError)
	assert.Less(t, time.Since(start), 5*time.Second)
	// Already aborted: a new wait fails at once rather than after the timeout.
	requireCode(t, aborted.waitTurn(aborted.order.take()), gccl.RemoteError)

	broken := turnEngine(10 * time.Second)
	broken.order.take()
	broken.setAsyncError(gccl.Errorf(gccl.SystemError, "x", "peer gone"))
	requireCode(t, broken.waitTurn(broken.order.take()), gccl.SystemError)
}
