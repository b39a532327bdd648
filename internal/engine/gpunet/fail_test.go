package gpunet

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeadRank: rank 2 aborts while ranks 0 and 1 run an all-reduce that
// needs it: both get a typed error (network or timeout) well within the
// deadline, and nothing hangs.
func TestDeadRank(t *testing.T) {
	const timeout = 5 * time.Second
	w := newWorld(t, 3, 8*4096, 2, timeout)
	count := 200000
	start := time.Now()
	w.engines[2].Abort()
	require.NoError(t, w.engines[2].Close())
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			buf := w.buf(t, r, bytes.Repeat([]byte{1}, 4*count))
			if errs[r] = w.engines[r].Launch([]engine.Op{{Kind: algo.AllReduce, Send: buf, Recv: buf, Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]}}); errs[r] != nil {
				return
			}
			_ = w.devs[r].Synchronize(w.streams[r])
			errs[r] = w.engines[r].AsyncError()
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.True(t, errors.Is(err, gccl.ErrRemote) || errors.Is(err, gccl.ErrTimeout) || errors.Is(err, gccl.ErrSystem), "rank %d: %v", r, err)
		t.Logf("rank %d: %v", r, err)
	}
	assert.Less(t, time.Since(start), 2*timeout)
	for r := range 2 { // the survivors give up too: a Close would wait for rank 2
		require.NoError(t, w.engines[r].Abort())
	}
}

// TestCountMismatch: ranks that launch all-reduces of different counts
// get gccl.ErrInvalidUsage (the kernels' StatusBadUsage), not wrong data
// or a hang.
func TestCountMismatch(t *testing.T) {
	w := newWorld(t, 2, 8*4096, 2, 5*time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			count := 1000 + r
			buf := w.buf(t, r, bytes.Repeat([]byte{1}, 4*count))
			if errs[r] = w.engines[r].Launch([]engine.Op{{Kind: algo.AllReduce, Send: buf, Recv: buf, Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: w.streams[r]}}); errs[r] != nil {
				return
			}
			_ = w.devs[r].Synchronize(w.streams[r])
			errs[r] = w.engines[r].AsyncError()
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "rank %d", r)
	}
}
