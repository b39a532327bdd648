package gpunet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// warnLogger logs the lines at WARN and above into b (slog's handler
// serialises the writes; read b once every rank's Close returned).
func warnLogger(b *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// allReduce runs one all-reduce on every rank, so that every connection
// has carried slots before the teardown.
func (w *world) allReduce(t *testing.T, count int) {
	t.Helper()
	ops := make([][]engine.Op, w.n)
	for r := range ops {
		buf := w.buf(t, r, bytes.Repeat([]byte{byte(r + 1)}, 4*count))
		ops[r] = []engine.Op{{Kind: algo.AllReduce, Send: buf, Recv: buf, Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]}}
	}
	w.launch(t, ops)
}

// TestCloseOrderly: ranks across hosts (network connections, and direct
// ones on the two-rank host) that close concurrently, at different times,
// in different orders, log no warning, their proxies report no failure (so their
// status words stayed clean), and every Close returns nil.
func TestCloseOrderly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay func(r int) time.Duration
	}{
		{"together", nil},
		{"rank 0 late", func(r int) time.Duration { return time.Duration(1-min(r, 1)) * 300 * time.Millisecond }},
		{"last rank late", func(r int) time.Duration { return time.Duration(r/3) * 300 * time.Millisecond }},
		{"staggered", func(r int) time.Duration { return time.Duration(3-r) * 100 * time.Millisecond }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			w, errs := openWorldLog(t, []int{0, 1, 2, 2}, 8*4096, 2, 10*time.Second, nil, warnLogger(&logs))
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
			w.allReduce(t, 50000)
			for r, err := range w.closeAll(tc.delay) {
				assert.NoError(t, err, "rank %d's Close", r)
				assert.NoError(t, w.backs[r].px.Err(), "rank %d's proxy", r)
				assert.NoError(t, w.engines[r].AsyncError(), "rank %d", r)
			}
			assert.Empty(t, logs.String(), "warnings at an orderly Close")
		})
	}
}

// finalize is comm.Finalize's part on every rank at once: drain, quiesce
// (the proxy stops), then the barrier.
func (w *world) finalize(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, w.n)
	for r, e := range w.engines {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs[r] = errors.Join(e.Drain(ctx), e.Quiesce(ctx), w.boots[r].Barrier(ctx))
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d's finalize", r)
	}
}

// TestCloseOneAfterAnother: one goroutine closes the ranks one after the
// other (NCCL's loop of ncclCommDestroy over a process's ranks), with and
// without a Finalize first, with network edges between hosts and direct
// ones on the two-rank host: every Close returns nil at once (a Close
// waits for no peer), no rank logs a warning, and the ranks still open
// keep clean status words while their peers close.
func TestCloseOneAfterAnother(t *testing.T) {
	const timeout = 10 * time.Second
	for _, tc := range []struct {
		name     string
		finalize bool
		order    []int
	}{{"in order", false, []int{0, 1, 2, 3}}, {"reversed", false, []int{3, 2, 1, 0}}, {"finalized", true, []int{1, 3, 0, 2}}} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			w, errs := openWorldLog(t, []int{0, 1, 2, 2}, 8*4096, 2, timeout, nil, warnLogger(&logs))
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
			w.allReduce(t, 50000)
			if tc.finalize {
				w.finalize(t)
			}
			closed := map[int]bool{}
			for _, r := range tc.order {
				start := time.Now()
				require.NoError(t, w.engines[r].Close(), "rank %d's Close", r)
				assert.Less(t, time.Since(start), timeout/5, "rank %d's Close", r)
				assert.NoError(t, w.backs[r].px.Err(), "rank %d's proxy", r)
				closed[r] = true
				time.Sleep(50 * time.Millisecond) // the others' proxies see the close
				for o := range w.n {
					if !closed[o] {
						assert.NoError(t, w.backs[o].Status(), "rank %d's status word once rank %d closed", o, r)
						assert.NoError(t, w.engines[o].AsyncError(), "rank %d", o)
					}
				}
			}
			assert.Empty(t, logs.String(), "warnings while ranks closed one after the other")
		})
	}
}

// TestLaunchAfterPeerClosed: a rank that closed its communicator in order
// fails the others' later operations fast, with gccl.ErrRemote naming it
// where a rank sees it (a receive from it, a send to it), never a
// timeout.
func TestLaunchAfterPeerClosed(t *testing.T) {
	const timeout = 10 * time.Second
	w := newWorld(t, 4, 8*4096, 2, timeout)
	w.allReduce(t, 1000)
	require.NoError(t, w.engines[0].Close())
	time.Sleep(50 * time.Millisecond) // the others' proxies see the close
	start := time.Now()
	errs := w.allReduceOn(t, map[int]int{1: 20000, 2: 20000, 3: 20000})
	assert.Less(t, time.Since(start), timeout/2)
	for r := 1; r < w.n; r++ {
		t.Logf("rank %d: %v", r, errs[r])
		assert.ErrorIs(t, errs[r], gccl.ErrRemote, "rank %d", r)
	}
	for _, r := range []int{1, 3} { // rank 0's ring neighbours
		assert.Contains(t, errs[r].Error(), "peer rank 0 closed its communicator", "rank %d", r)
	}
	for r := 1; r < w.n; r++ {
		require.NoError(t, w.engines[r].Abort())
	}
}
