package hoststream

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventCompletesAtItsPoint(t *testing.T) {
	s := New()
	defer s.Close()
	release := make(chan struct{})
	early := s.RecordEvent()
	require.NoError(t, s.Enqueue(func() error { <-release; return nil }))
	late := s.RecordEvent()

	require.NoError(t, early.Wait(ctxFor(t, 10*time.Second)))
	done, err := late.Query()
	assert.False(t, done)
	assert.NoError(t, err)
	assert.ErrorIs(t, late.Wait(ctxFor(t, 20*time.Millisecond)), gccl.ErrTimeout)

	close(release)
	require.NoError(t, late.Wait(ctxFor(t, 10*time.Second)))
	done, err = late.Query()
	assert.True(t, done)
	assert.NoError(t, err)
}

func TestEventCarriesStreamError(t *testing.T) {
	s := New()
	defer s.Close()
	before := s.RecordEvent()
	boom := gccl.Errorf(gccl.SystemError, "x", "boom")
	require.NoError(t, s.Enqueue(func() error { return boom }))
	after := s.RecordEvent()
	assert.ErrorIs(t, after.Wait(ctxFor(t, 10*time.Second)), boom)
	assert.NoError(t, before.Wait(ctxFor(t, 10*time.Second)))
}

func TestNilEvent(t *testing.T) {
	var e *Event
	done, err := e.Query()
	assert.True(t, done)
	assert.NoError(t, err)
	assert.ErrorIs(t, e.Wait(ctxFor(t, time.Second)), gccl.ErrInvalidArgument)
	s := New()
	defer s.Close()
	assert.ErrorIs(t, s.WaitEvent(nil), gccl.ErrInvalidArgument)
}

func TestWaitEventOrdersAcrossStreams(t *testing.T) {
	a, b := New(), New()
	defer a.Close()
	defer b.Close()
	release := make(chan struct{})
	var aDone, bSawA atomic.Bool
	require.NoError(t, a.Enqueue(func() error { <-release; aDone.Store(true); return nil }))
	require.NoError(t, b.WaitEvent(a.RecordEvent()))
	require.NoError(t, b.Enqueue(func() error { bSawA.Store(aDone.Load()); return nil }))

	time.Sleep(10 * time.Millisecond)
	done, _ := b.Query()
	assert.False(t, done, "b must wait for a")
	// The caller is never blocked by WaitEvent.
	require.NoError(t, b.Enqueue(func() error { return nil }))

	close(release)
	require.NoError(t, b.Synchronize(ctxFor(t, 10*time.Second)))
	assert.True(t, bSawA.Load(), "b's task ran before a's work finished")
}

func TestWaitEventPropagatesFailure(t *testing.T) {
	a, b := New(), New()
	defer a.Close()
	defer b.Close()
	boom := errors.New("boom")
	require.NoError(t, a.Enqueue(func() error { return boom }))
	require.NoError(t, b.WaitEvent(a.RecordEvent()))
	var ran atomic.Bool
	require.NoError(t, b.Enqueue(func() error { ran.Store(true); return nil }))
	err := b.Synchronize(ctxFor(t, 10*time.Second))
	assert.ErrorIs(t, err, boom)
	assert.False(t, ran.Load())
}

func TestWaitEventHasADeadline(t *testing.T) {
	a, b := New(), NewWithTimeout(20*time.Millisecond)
	defer a.Close()
	defer b.Close()
	release := make(chan struct{})
	defer close(release)
	require.NoError(t, a.Enqueue(func() error { <-release; return nil }))
	require.NoError(t, b.WaitEvent(a.RecordEvent()))
	err := b.Synchronize(ctxFor(t, 10*time.Second))
	require.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Equal(t, "event", err.(*gccl.Error).Arg)
}
