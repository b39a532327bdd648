package wait

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/require"
)

func TestDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(1e9, 0))
	defer cancel()
	require.Equal(t, time.Unix(1e9, 0), Deadline(ctx, time.Hour))
	d := Deadline(context.Background(), time.Second)
	require.WithinDuration(t, time.Now().Add(time.Second), d, 100*time.Millisecond)
	d = Deadline(context.Background(), 0)
	require.WithinDuration(t, time.Now().Add(DefaultTimeout), d, 100*time.Millisecond)
}

func TestPollerEndsAtDeadline(t *testing.T) {
	p := Poller{Ctx: context.Background(), Deadline: time.Now().Add(20 * time.Millisecond), What: "x"}
	start := time.Now()
	var err error
	for err == nil {
		err = p.Pause()
	}
	require.ErrorIs(t, err, gccl.ErrTimeout)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.Less(t, time.Since(start), time.Second)
}

func TestPollerCancelAndAlive(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := Poller{Ctx: ctx, What: "x"}
	var err error
	for err == nil {
		err = p.Pause()
	}
	require.ErrorIs(t, err, gccl.ErrTimeout)
	require.ErrorIs(t, err, context.Canceled)

	gone := errors.New("gone")
	p = Poller{Ctx: context.Background(), Deadline: time.Now().Add(time.Second), Alive: func() error { return gone }}
	for err = nil; err == nil; {
		err = p.Pause()
	}
	require.ErrorIs(t, err, gone)
}

func TestPollerWithoutContext(t *testing.T) {
	p := Poller{Deadline: time.Now().Add(10 * time.Millisecond), What: "settling"}
	var err error
	for err == nil {
		err = p.Pause()
	}
	require.ErrorIs(t, err, gccl.ErrTimeout)
	require.Contains(t, err.Error(), "settling")
}

// TestPollerSpinFor: SpinFor keeps the poller yielding rather than
// sleeping, so it polls far more often in the same time.
func TestPollerSpinFor(t *testing.T) {
	count := func(spin time.Duration) int {
		p := Poller{Deadline: time.Now().Add(20 * time.Millisecond), SpinFor: spin}
		n := 0
		for p.Pause() == nil {
			n++
		}
		return n
	}
	sleeping, spinning := count(0), count(time.Hour)
	require.Less(t, sleeping, 1000, "without SpinFor the poller sleeps")
	require.Greater(t, spinning, 2000, "with SpinFor it only yields")
}
