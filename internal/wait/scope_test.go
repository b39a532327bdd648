package wait

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScopeEndsAtDeadlineWithoutDone(t *testing.T) {
	var s Scope
	s.Reset(nil, time.Now().Add(20*time.Millisecond))
	defer s.Release()
	d, ok := s.Deadline()
	require.True(t, ok)
	require.NoError(t, s.Err())
	require.Eventually(t, func() bool { return s.Err() != nil }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, s.Err(), context.DeadlineExceeded)
	require.False(t, time.Now().Before(d))
	require.Error(t, CtxErr(&s, d, "x"), "polling waits see the deadline")
}

func TestScopeDoneClosesAtDeadline(t *testing.T) {
	var s Scope
	s.Reset(context.Background(), time.Now().Add(20*time.Millisecond))
	defer s.Release()
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not close at the deadline")
	}
	require.ErrorIs(t, s.Err(), context.DeadlineExceeded)
}

func TestScopeFollowsParentAndCancel(t *testing.T) {
	parent, abort := context.WithCancel(context.Background())
	var s Scope
	s.Reset(parent, time.Now().Add(time.Hour))
	done := s.Done()
	child, stop := context.WithCancel(&s)
	defer stop()
	abort()
	<-done
	<-child.Done()
	require.ErrorIs(t, s.Err(), context.Canceled)

	s.Reset(context.Background(), time.Now().Add(time.Hour))
	require.NoError(t, s.Err(), "Reset starts afresh")
	s.Cancel()
	require.ErrorIs(t, s.Err(), context.Canceled)
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done made after Cancel is not closed")
	}
	s.Release()
}

func TestScopeWithoutDoneAllocatesNothing(t *testing.T) {
	var s Scope
	deadline := time.Now().Add(time.Hour)
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset(context.Background(), deadline)
		_ = s.Err()
		_, _ = s.Deadline()
		s.Cancel()
		s.Release()
	})
	require.Zero(t, allocs)
}
