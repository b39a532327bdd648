package coll_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/comm"
	"github.com/stretchr/testify/require"
)

// TestBadInput: every failure a caller can cause is a *gccl.Error with the
// right code naming the argument, returned at once, and nothing runs.
func TestBadInput(t *testing.T) {
	w := colltest.New(t, 3, nil)
	rng := rand.New(rand.NewPCG(9, 9))
	c, s := w.Comms[1], w.Streams[1]
	p, buf := w.Alloc(t, 1, 256, rng)
	q, _ := w.Alloc(t, 1, 256, rng)
	before := bytes.Clone(buf)
	pm, err := coll.CreatePreMulSum(c, p, gccl.Float32, coll.ScalarHostImmediate)
	require.NoError(t, err)
	gone, err := coll.CreatePreMulSum(c, p, gccl.Float32, coll.ScalarHostImmediate)
	require.NoError(t, err)
	require.NoError(t, coll.DestroyRedOp(c, gone))
	var nilComm *comm.Comm
	tests := []struct {
		name string
		code gccl.Result
		arg  string
		call func() error
	}{
		{"nil sendbuff", gccl.InvalidArgument, "sendbuff", func() error { return coll.AllReduce(c, 0, q, 4, gccl.Int32, gccl.Sum, s) }},
		{"nil recvbuff", gccl.InvalidArgument, "recvbuff", func() error { return coll.AllGather(c, p, 0, 4, gccl.Int32, s) }},
		{"nil root recvbuff", gccl.InvalidArgument, "recvbuff", func() error { return coll.Reduce(c, p, 0, 4, gccl.Int32, gccl.Sum, 1, s) }},
		{"nil root sendbuff", gccl.InvalidArgument, "sendbuff", func() error { return coll.Broadcast(c, 0, q, 4, gccl.Int32, 1, s) }},
		{"negative count", gccl.InvalidArgument, "count", func() error { return coll.AllReduce(c, p, q, -1, gccl.Int32, gccl.Sum, s) }},
		{"count overflow", gccl.InvalidArgument, "count", func() error { return coll.AllReduce(c, p, q, 1<<62, gccl.Int64, gccl.Sum, s) }},
		{"gathered count overflow", gccl.InvalidArgument, "count", func() error { return coll.ReduceScatter(c, p, q, 1<<62, gccl.Int8, gccl.Sum, s) }},
		{"unknown type", gccl.InvalidArgument, "datatype", func() error { return coll.AllReduce(c, p, q, 4, gccl.DataType(12), gccl.Sum, s) }},
		{"negative type", gccl.InvalidArgument, "datatype", func() error { return coll.AllGather(c, p, q, 4, gccl.DataType(-1), s) }},
		{"unknown op", gccl.InvalidArgument, "op", func() error { return coll.AllReduce(c, p, q, 4, gccl.Int32, gccl.RedOp(99), s) }},
		{"negative op", gccl.InvalidArgument, "op", func() error { return coll.Reduce(c, p, q, 4, gccl.Int32, gccl.RedOp(-1), 0, s) }},
		{"destroyed op", gccl.InvalidArgument, "op", func() error { return coll.AllReduce(c, p, q, 4, gccl.Float32, gone, s) }},
		{"premulsum of another type", gccl.InvalidArgument, "op", func() error { return coll.AllReduce(c, p, q, 4, gccl.Float64, pm, s) }},
		{"root too large", gccl.InvalidArgument, "root", func() error { return coll.Broadcast(c, p, q, 4, gccl.Int32, 3, s) }},
		{"negative root", gccl.InvalidArgument, "root", func() error { return coll.Reduce(c, p, q, 4, gccl.Int32, gccl.Max, -1, s) }},
		{"allreduce partial overlap", gccl.InvalidArgument, "recvbuff", func() error { return coll.AllReduce(c, p, p+4, 4, gccl.Int32, gccl.Sum, s) }},
		{"allgather wrong in-place offset", gccl.InvalidArgument, "recvbuff", func() error { return coll.AllGather(c, p, p, 4, gccl.Int32, s) }},
		{"reducescatter wrong in-place offset", gccl.InvalidArgument, "recvbuff", func() error { return coll.ReduceScatter(c, p, p, 4, gccl.Int32, gccl.Sum, s) }},
		{"unknown stream", gccl.InvalidArgument, "stream", func() error { return coll.AllReduce(c, p, q, 4, gccl.Int32, gccl.Sum, 0xdead) }},
		{"nil comm", gccl.InvalidArgument, "comm", func() error { return coll.AllReduce(nil, p, q, 4, gccl.Int32, gccl.Sum, s) }},
		{"nil *comm.Comm", gccl.InvalidArgument, "comm", func() error { return coll.AllReduce(nilComm, p, q, 4, gccl.Int32, gccl.Sum, s) }},
		{"premulsum nil scalar", gccl.InvalidArgument, "scalar", func() error {
			_, err := coll.CreatePreMulSum(c, 0, gccl.Float32, coll.ScalarHostImmediate)
			return err
		}},
		{"premulsum bad type", gccl.InvalidArgument, "datatype", func() error {
			_, err := coll.CreatePreMulSum(c, p, gccl.DataType(40), coll.ScalarHostImmediate)
			return err
		}},
		{"destroy twice", gccl.InvalidArgument, "op", func() error { return coll.DestroyRedOp(c, gone) }},
	}
	for _, tc := range tests {
		err := tc.call()
		var ge *gccl.Error
		require.ErrorAs(t, err, &ge, tc.name)
		require.Equal(t, tc.code, ge.Code, "%s: %v", tc.name, err)
		require.Equal(t, tc.arg, ge.Arg, "%s: %v", tc.name, err)
	}
	require.NoError(t, w.Devs[1].Synchronize(s))
	require.Equal(t, before, buf, "a rejected operation must not run")
	require.NoError(t, c.AsyncError(), "rejected operations are not async errors")
}

// TestClosedComm: operations on a closed or finalized communicator fail
// at once with gccl.ErrInvalidUsage.
func TestClosedComm(t *testing.T) {
	w := colltest.New(t, 2, nil)
	rng := rand.New(rand.NewPCG(9, 10))
	p, _ := w.Alloc(t, 0, 64, rng)
	require.NoError(t, w.Comms[0].Close())
	err := coll.AllReduce(w.Comms[0], p, p, 4, gccl.Int32, gccl.Sum, w.Streams[0])
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	_, err = coll.CreatePreMulSum(w.Comms[0], p, gccl.Int32, coll.ScalarHostImmediate)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
}

// TestFinalizeDrains: Finalize waits for operations still queued, then
// every rank sees the results.
func TestFinalizeDrains(t *testing.T) {
	w := colltest.New(t, 3, nil)
	rng := rand.New(rand.NewPCG(9, 11))
	var ck checker
	for range 3 {
		ops, _ := redOps(t, w, gccl.Sum, gccl.Float64, false, rng)
		c := &rcase{kind: "allreduce", dt: gccl.Float64, ops: ops, op: gccl.Sum, count: 50_003}
		c.issue(t, w, &ck, rng)
	}
	errs := make(chan error, w.N())
	for _, c := range w.Comms {
		go func() { errs <- c.Finalize() }()
	}
	for range w.N() {
		require.NoError(t, <-errs)
	}
	for _, f := range ck.checks {
		require.NoError(t, f(), "results must be complete when Finalize returns")
	}
}
