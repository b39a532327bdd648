package gpunet

import (
	"bytes"
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
// ones on the two-rank host) that close at different times, in different
// orders, log no warning, their proxies report no failure (so their
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

// TestCloseWithoutPeer: a rank that never calls Close makes the others'
// Close return an error naming it once the timeout passed, not hang;
// their connections are aborted.
func TestCloseWithoutPeer(t *testing.T) {
	const timeout = 2 * time.Second
	w := newWorld(t, 3, 8*4096, 2, timeout)
	w.allReduce(t, 1000)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() { errs[r] = w.engines[r].Close() })
	}
	wg.Wait()
	took := time.Since(start)
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.ErrorIs(t, err, gccl.ErrTimeout, "rank %d", r)
		assert.Contains(t, err.Error(), "ranks [2]", "rank %d", r)
		t.Logf("rank %d: %v", r, err)
	}
	assert.GreaterOrEqual(t, took, timeout)
	assert.Less(t, took, 2*timeout)
	require.NoError(t, w.engines[2].Abort()) // rank 2 gives up too
}
