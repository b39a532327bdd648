package main

import (
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/internal/engine/gpu"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixedPath is a pathSource that always names one path.
type fixedPath string

func (p fixedPath) LastGPUPath() string { return string(p) }

// A one-rank sweep on the fake GPU with the memory view: each row has the
// copy's traffic (read and write of the size) against the operation's
// time, a reference copy of the same size timed on the stream, and the
// table and summary show the columns.
func TestSweepOnFakeGPUWithMemoryView(t *testing.T) {
	fake, _ := fakePair(t, 200*time.Microsecond)
	r, out := fakeRanker(t, []string{"-op", "broadcast", "-b", "16M", "-e", "32M", "-n", "3", "-w", "1"}, fake, nil)
	var err error
	r.mem, err = newMemView(r.cfg, fixedPath(gpu.PathCopy), fake.Dev, fake.Stream, 0)
	require.NoError(t, err)
	require.NotNil(t, r.mem)
	t.Cleanup(func() { assert.NoError(t, r.mem.Close()) })
	res, err := r.sweep(perf.Broadcast)
	require.NoError(t, err)
	require.Len(t, res.rows, 2)
	for _, row := range res.rows {
		m := row.Mem
		require.NotNil(t, m, "size %d", row.Size)
		assert.Equal(t, 2*row.Size, m.Bytes)
		assert.Equal(t, row.Size, m.CopySize)
		assert.Equal(t, row.Gccl.Time, m.Time)
		assert.Positive(t, m.CopyTime)
		assert.Equal(t, gpu.PathCopy, m.Path)
	}
	assert.Equal(t, int64(32<<20), r.mem.size, "the copy buffers grow to the largest size")
	text := out.String()
	assert.Contains(t, text, "memGB/s")
	assert.Contains(t, text, " copy\n")
	assert.Contains(t, text, "# memory traffic     :")
}

// Without -mem, or off a GPU, there is no view.
func TestMemViewOff(t *testing.T) {
	d, s := perftest.GPU(t)
	m, err := newMemView(mustParse(t, "-mem=false"), fixedPath("x"), d, s, 0)
	require.NoError(t, err)
	require.Nil(t, m)
	m, err = newMemView(mustParse(t), nil, d, s, 0)
	require.NoError(t, err)
	require.Nil(t, m)
	require.NoError(t, m.Close())
}

// traffic adds a Send/Recv pair's sides and knows no all-to-all.
func TestTrafficOfCalls(t *testing.T) {
	c := lib.Call{Op: perf.SendRecv, Count: 1 << 20, Type: gccl.Float32, Rank: 1, NRanks: 4}
	tr, ok := traffic(kernels.P2P, c, false)
	require.True(t, ok)
	require.Equal(t, gpu.Traffic{Read: 8 << 20, Write: 8 << 20}, tr)
	c.Op = perf.AllToAll
	_, ok = traffic(kernels.P2P, c, false)
	require.False(t, ok)
	c.Op = perf.AllReduce
	tr, ok = traffic(kernels.AllReducePipelined, c, false)
	require.True(t, ok)
	require.Equal(t, gpu.Traffic{Read: 12 << 20, Write: 12 << 20}, tr)
}

// Ranks on one GPU add up; across GPUs the busiest counts; rank 0's copy
// time is everyone's; a rank without a figure leaves the row without a view.
func TestMemViewRowAgrees(t *testing.T) {
	d, s := perftest.GPU(t)
	run := func(gpus []uint64, paths []string) (*perf.Memory, error) {
		n := len(gpus)
		x := exchange.NewLocal(n, 10*time.Second)
		views := make([]*memView, n)
		for r := range n {
			var err error
			views[r], err = newMemView(mustParse(t, "-n", "2", "-timeout", "10s"), fixedPath(paths[r]), d, s, r)
			require.NoError(t, err)
			views[r].gpu = gpus[r]
			t.Cleanup(func() { assert.NoError(t, views[r].Close()) })
		}
		mems, errs := make([]*perf.Memory, n), make([]error, n)
		var wg sync.WaitGroup
		for r := range n {
			wg.Go(func() {
				c := lib.Call{Op: perf.Broadcast, Count: 1 << 18, Type: gccl.Float32, Root: 0, Rank: r, NRanks: n}
				mems[r], errs[r] = views[r].row(x.Rank(r), c, 1<<20, time.Millisecond, false)
			})
		}
		wg.Wait()
		require.NoError(t, errs[1])
		return mems[0], errs[0]
	}
	const mib = 1 << 20
	staged := kernels.BroadcastStaged // root: 2.25+2.75 MiB, others 1.25+1.75 MiB at 4 ranks
	m, err := run([]uint64{7, 7, 7, 7}, []string{staged, staged, staged, staged})
	require.NoError(t, err)
	require.Equal(t, int64(5*mib+3*3*mib), m.Bytes)
	require.Positive(t, m.CopyTime)
	require.Equal(t, staged, m.Path)
	m, err = run([]uint64{1, 2, 3, 4}, []string{staged, staged, staged, staged})
	require.NoError(t, err)
	require.Equal(t, int64(5*mib), m.Bytes)
	m, err = run([]uint64{1, 1}, []string{staged, "gccl_fill_u32"})
	require.NoError(t, err)
	require.Nil(t, m)
}
