package fault

import (
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInitMissingRankTimesOut: three of four ranks join; each must get
// ErrTimeout within twice the configured deadline, and leak nothing.
func TestInitMissingRankTimesOut(t *testing.T) {
	before := countResources(t)
	const timeout = time.Second
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	blocking := true
	cfg := &comm.Config{Backend: device.Host, Timeout: timeout, Blocking: &blocking}
	start := time.Now()
	comms, errs := gccltest.Parallel(3, func(r int) (*comm.Comm, error) { return comm.InitRankConfig(4, id, r, cfg) })
	took := time.Since(start)
	for r := range 3 {
		assert.Nil(t, comms[r])
		assert.ErrorIs(t, errs[r], gccl.ErrTimeout, "rank %d", r)
	}
	assert.GreaterOrEqual(t, took, timeout/2, "gave up long before the deadline")
	assert.Less(t, took, 2*timeout)
	settle(t, before)
}

// TestOperationTimesOut: a rank that never joins an AllReduce (but stays
// alive) makes the others' wait end with ErrTimeout after the deadline,
// not before and not much after; AsyncError reports it.
func TestOperationTimesOut(t *testing.T) {
	const n, count, timeout = 4, 1024, time.Second
	comms := makeComms(t, n, timeout)
	bufs := makeBufs(t, comms, 4*count)
	start := time.Now()
	for r := range n - 1 {
		require.NoError(t, coll.AllReduce(comms[r], bufs[r].Send, bufs[r].Recv, count, gccl.Int32, gccl.Sum, bufs[r].S))
	}
	took, errs := gccltest.Parallel(n-1, func(r int) (time.Duration, error) {
		err := bufs[r].Dev.Synchronize(bufs[r].S)
		return time.Since(start), err
	})
	for r := range n - 1 {
		assert.ErrorIs(t, errs[r], gccl.ErrTimeout, "rank %d", r)
		assert.GreaterOrEqual(t, took[r], timeout*9/10, "rank %d gave up early", r)
		assert.Less(t, took[r], 2*timeout, "rank %d", r)
		assert.ErrorIs(t, comms[r].AsyncError(), gccl.ErrTimeout, "rank %d AsyncError", r)
	}
	assert.NoError(t, comms[n-1].AsyncError(), "the idle rank has no error")
}

// TestCloseWithWorkInFlight: Close on a communicator whose operation can
// never finish (a peer never joins) returns an error (the deadline), does
// not crash or hang, and frees everything; the stream's wait ends too.
func TestCloseWithWorkInFlight(t *testing.T) {
	before := countResources(t)
	const n, count, timeout = 2, 1 << 16, time.Second
	comms := makeComms(t, n, timeout)
	b, err := NewBufs(comms[0], 4*count, 1)
	require.NoError(t, err)
	require.NoError(t, coll.AllReduce(comms[0], b.Send, b.Recv, count, gccl.Int32, gccl.Sum, b.S))
	start := time.Now()
	err = comms[0].Close()
	took := time.Since(start)
	assert.Error(t, err, "Close with an operation that cannot finish")
	assert.ErrorIs(t, err, gccl.ErrInvalidUsage, "Close with work in flight")
	assert.Less(t, took, 2*timeout+time.Second)
	assert.Error(t, b.Dev.Synchronize(b.S), "the operation cut by Close must fail")
	assert.NoError(t, comms[0].Close(), "second Close")
	assert.NoError(t, comms[1].Close())
	b.Free()
	settle(t, before)
}

// TestFinalizeFlushes: operations launched before Finalize complete with
// correct results (checked against internal/reduce's reference), Finalize
// returns on every rank, later launches are refused, Close frees everything.
func TestFinalizeFlushes(t *testing.T) {
	before := countResources(t)
	const n, count, rounds = 4, 1 << 14, 8
	comms := makeComms(t, n, 10*time.Second)
	bufs := make([]*Bufs, n)
	for r, c := range comms {
		b, err := NewBufs(c, 4*count, 42)
		require.NoError(t, err)
		bufs[r] = b
		for range rounds {
			require.NoError(t, coll.AllReduce(c, b.Send, b.Recv, count, gccl.Int32, gccl.Sum, b.S))
		}
	}
	inputs := make([][]byte, n)
	for r, b := range bufs {
		inputs[r] = make([]byte, 4*count)
		require.NoError(t, b.Dev.CopyOut(inputs[r], b.Send))
	}
	want := reduce.Reference(inputs, gccl.Int32, gccl.Sum, 0)
	_, errs := gccltest.Parallel(n, func(r int) (struct{}, error) { return struct{}{}, comms[r].Finalize() })
	for r := range n {
		require.NoError(t, errs[r], "Finalize of rank %d", r)
		done, err := bufs[r].Dev.Query(bufs[r].S)
		require.NoError(t, err)
		assert.True(t, done, "rank %d: Finalize returned with work in flight", r)
		got := make([]byte, 4*count)
		require.NoError(t, bufs[r].Dev.CopyOut(got, bufs[r].Recv))
		assert.Equal(t, want, got, "rank %d's result", r)
		assert.ErrorIs(t, coll.AllReduce(comms[r], bufs[r].Send, bufs[r].Recv, count, gccl.Int32, gccl.Sum, bufs[r].S),
			gccl.ErrInvalidUsage, "launch after Finalize")
	}
	for r := range n {
		require.NoError(t, comms[r].Close())
		bufs[r].Free()
	}
	settle(t, before)
}
