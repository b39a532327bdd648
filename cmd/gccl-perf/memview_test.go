package main

import (
	"testing"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/internal/engine/gpu"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A one-rank sweep on the fake GPU with the memory view: each row has the
// copy's traffic (read and write of the size) against the operation's
// time, a reference copy of the same size timed on the stream, and the
// table and summary show the columns.
func TestSweepOnFakeGPUWithMemoryView(t *testing.T) {
	fake, _ := fakePair(t, 200*time.Microsecond)
	r, out := fakeRanker(t, []string{"-op", "broadcast", "-b", "16M", "-e", "32M", "-n", "3", "-w", "1"}, fake, nil)
	var err error
	r.mem, err = memView(r.cfg, perftest.Path(gpu.PathCopy), fake.Dev, fake.Stream, 0)
	require.NoError(t, err)
	require.NotNil(t, r.mem)
	t.Cleanup(func() { assert.NoError(t, r.mem.Close()) })
	res, err := r.sweep(perf.Broadcast)
	require.NoError(t, err)
	require.Len(t, res.Rows, 2)
	for _, row := range res.Rows {
		m := row.Mem
		require.NotNil(t, m, "size %d", row.Size)
		assert.Equal(t, 2*row.Size, m.Bytes)
		assert.Equal(t, row.Size, m.CopySize)
		assert.Equal(t, row.Gccl.Time, m.Time)
		assert.Positive(t, m.CopyTime)
		assert.Equal(t, gpu.PathCopy, m.Path)
	}
	text := out.String()
	assert.Contains(t, text, "memGB/s")
	assert.Contains(t, text, " copy\n")
	assert.Contains(t, text, "# memory traffic     :")
}

// Without -mem there is no view.
func TestMemViewOff(t *testing.T) {
	d, s := perftest.GPU(t)
	m, err := memView(mustParse(t, "-mem=false"), perftest.Path("x"), d, s, 0)
	require.NoError(t, err)
	require.Nil(t, m)
	m, err = memView(mustParse(t, "-timeout", "10s"), perftest.Path("x"), d, s, 0)
	require.NoError(t, err)
	require.NotNil(t, m)
	require.NoError(t, m.Close())
}
