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
	errs := w.allReduceOn(t, map[int]int{0: count, 1: count})
	for r, err := range errs[:2] { // an abort says no bye: a failure, as a death
		require.Error(t, err, "rank %d", r)
		assert.ErrorIs(t, err, gccl.ErrRemote, "rank %d", r)
		t.Logf("rank %d: %v", r, err)
	}
	assert.Less(t, time.Since(start), timeout/2)
}

// allReduceOn runs one all-reduce of ones at once on each rank r of
// counts, of counts[r] int32s (runOn), and returns each one's error by rank.
func (w *world) allReduceOn(t *testing.T, counts map[int]int) []error {
	ops := make(map[int]engine.Op, len(counts))
	for r, count := range counts {
		ops[r] = int32AllReduce(count, gccl.Sum)
	}
	return w.runOn(t, ops)
}

// int32AllReduce is an all-reduce of count int32s with op, buffers and
// stream left to runOn.
func int32AllReduce(count int, op gccl.RedOp) engine.Op {
	return engine.Op{Kind: algo.AllReduce, Count: count, Type: gccl.Int32, Op: op}
}

// TestCountMismatch: ranks that launch all-reduces of different counts
// get gccl.ErrInvalidUsage (the kernels' StatusBadUsage), not wrong data
// or a hang.
func TestCountMismatch(t *testing.T) {
	w := newWorld(t, 2, 8*4096, 2, 5*time.Second)
	errs := w.allReduceOn(t, map[int]int{0: 1000, 1: 1001})
	for r, err := range errs {
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "rank %d", r)
	}
}

// TestDisagreeingOperations: ranks that launch different operations whose
// slots have the same sizes (another operator, another collective, a
// count that cuts into the same chunks, another root) get
// gccl.ErrInvalidUsage from the ring kernels' key trailer, at that launch
// or, where no rank received anything (two ranks that each think they
// are the root), at the next one, instead of completing with wrong data.
func TestDisagreeingOperations(t *testing.T) {
	const count = 1000 // int32: the gather all-reduce; 3000 takes the ring
	ar := int32AllReduce
	cases := []struct {
		name   string
		r0, r1 engine.Op
	}{
		{"operator", ar(count, gccl.Sum), ar(count, gccl.Max)},
		{"operator/ring", ar(3000, gccl.Sum), ar(3000, gccl.Min)},
		{"count/same chunks", ar(3000, gccl.Sum), ar(3008, gccl.Sum)},
		{"kind", ar(count, gccl.Sum), engine.Op{Kind: algo.Reduce, Count: count, Type: gccl.Int32, Op: gccl.Sum, Root: 0}},
		{"root", engine.Op{Kind: algo.Broadcast, Count: count, Type: gccl.Int32, Root: 0},
			engine.Op{Kind: algo.Broadcast, Count: count, Type: gccl.Int32, Root: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 2, 8*4096, 2, 5*time.Second)
			first := w.runOn(t, map[int]engine.Op{0: c.r0, 1: c.r1})
			var next []error
			if first[0] == nil || first[1] == nil {
				next = w.runOn(t, map[int]engine.Op{0: ar(1, gccl.Sum), 1: ar(1, gccl.Sum)})
			}
			for r, err := range first {
				if err == nil {
					err = next[r]
				}
				require.ErrorIs(t, err, gccl.ErrInvalidUsage, "rank %d (first launch: %v)", r, first[r])
			}
		})
	}
}

// runOn runs ops[r] (buffers of ones made here) at once on each rank r
// of ops and returns each one's error (Launch's, else the async error
// once its stream is done), by rank.
func (w *world) runOn(t *testing.T, ops map[int]engine.Op) []error {
	errs := make([]error, w.n)
	var wg sync.WaitGroup
	for r, o := range ops {
		wg.Go(func() {
			send, recv := o.Sizes(w.n)
			o.Send = w.buf(t, r, bytes.Repeat([]byte{1}, send))
			o.Recv = w.buf(t, r, make([]byte, recv))
			o.Stream = w.streams[r]
			if errs[r] = w.engines[r].Launch([]engine.Op{o}); errs[r] != nil {
				return
			}
			_ = w.devs[r].Synchronize(w.streams[r])
			errs[r] = w.engines[r].AsyncError()
		})
	}
	wg.Wait()
	return errs
}

// TestDisagreeingOperationsRing: on a ring of 3 hosts x 1 rank, and of 2
// hosts x 2 (two direct edges, two network ones), rank 0 launches another
// operator than the others. The ranks that receive its slots fail with
// gccl.ErrInvalidUsage; their proxies see the kernel's failure, stop and
// tell the peers of all their network connections, senders and receivers
// (as for a network failure), and so on around the ring, so that a rank
// that waits for data that will never come fails at once rather than at
// its deadline, across a direct edge too (its neighbour's network
// connection tells it). Every rank gets a typed error, none hangs and none
// completes.
func TestDisagreeingOperationsRing(t *testing.T) {
	const timeout = 20 * time.Second
	for _, tc := range []struct {
		name  string
		hosts []int
	}{{"3hostsx1", hostsOf(3, 1)}, {"2hostsx2", hostsOf(4, 2)}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOn(t, tc.hosts, 8*4096, 2, timeout, nil)
			start := time.Now()
			ops := map[int]engine.Op{0: int32AllReduce(3000, gccl.Max)}
			for r := 1; r < len(tc.hosts); r++ {
				ops[r] = int32AllReduce(3000, gccl.Sum)
			}
			errs := w.runOn(t, ops)
			usage := 0
			for r, err := range errs {
				require.Error(t, err, "rank %d", r)
				t.Logf("rank %d: %v", r, err)
				if errors.Is(err, gccl.ErrInvalidUsage) {
					usage++
					continue
				}
				require.ErrorIs(t, err, gccl.ErrRemote, "rank %d", r)
			}
			assert.Positive(t, usage, "no rank reported the disagreement: %v", errs)
			assert.Less(t, time.Since(start), timeout/4, "the failure did not spread: a rank waited for its deadline")
		})
	}
}
