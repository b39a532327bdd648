package main

import (
	"io"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlagsDefaults(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []perf.Op{perf.AllReduce}, c.ops)
	assert.Equal(t, int64(1024), c.minBytes)
	assert.Equal(t, int64(64<<20), c.maxBytes)
	assert.Equal(t, 2.0, c.factor)
	assert.Equal(t, gccl.Float32, c.dtype)
	assert.Equal(t, gccl.Sum, c.redop)
	assert.True(t, c.check)
	assert.Equal(t, "none", c.baseline)
	assert.Equal(t, 0, c.np)
	assert.True(t, c.checks(1<<40), "every size is checked by default")
}

func TestParseFlagsEverySetting(t *testing.T) {
	c, err := parseFlags([]string{"-op", "ReduceScatter", "-b", "8", "-e", "2M", "-f", "4", "-t", "half",
		"-o", "max", "-r", "1", "-n", "7", "-w", "0", "-inplace", "-graph", "-check=false", "-np", "3",
		"-csv", "a.csv", "-png", "a.png", "-json", "a.json", "-progress", "-seed", "9", "-timeout", "3s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []perf.Op{perf.ReduceScatter}, c.ops)
	assert.Equal(t, int64(8), c.minBytes)
	assert.Equal(t, int64(2<<20), c.maxBytes)
	assert.Equal(t, 4.0, c.factor)
	assert.Equal(t, gccl.Float16, c.dtype)
	assert.Equal(t, gccl.Max, c.redop)
	assert.Equal(t, 1, c.root)
	assert.Equal(t, 7, c.iters)
	assert.Equal(t, 0, c.warmup)
	assert.True(t, c.inplace && c.graph && c.progress)
	assert.False(t, c.check)
	assert.Equal(t, 3, c.np)
	assert.Equal(t, [3]string{"a.csv", "a.png", "a.json"}, [3]string{c.csv, c.png, c.json})
	assert.Equal(t, uint64(9), c.seed)
	assert.Equal(t, 3*time.Second, c.timeout)

	assert.Equal(t, 5, c.launches, "default")
	assert.Zero(t, c.batch, "default: automatic")
	assert.False(t, c.register, "default")
	c, err = parseFlags([]string{"-graph", "-launches", "9", "-batch", "3", "-register"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, [3]int{9, 3, 1}, [3]int{c.launches, c.batch, map[bool]int{true: 1}[c.register]})

	c, err = parseFlags([]string{"-op", "all", "-t", "bfloat16", "-baseline", "mpi"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, perf.Ops(), c.ops)
	assert.Equal(t, gccl.BFloat16, c.dtype)
	assert.Equal(t, "mpi", c.baseline)
}

func TestParseFlagsRejectsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-op", "allgatherv"}, {"-b", "1X"}, {"-e", "-5"}, {"-b", "2M", "-e", "1M"}, {"-f", "1"},
		{"-n", "0"}, {"-w", "-1"}, {"-r", "-2"}, {"-np", "-1"}, {"-t", "float128"}, {"-o", "xor"},
		{"-baseline", "gloo"}, {"-baseline", "mpi", "-np", "2"}, {"-timeout", "-1s"}, {"extra"}, {"-nosuch"},
		{"-launches", "0"}, {"-checkmax", "lots"}, {"-batch", "-1"}, {"-register=maybe"},
		{"-device", "-2"}, {"-mem=often"}, {"-halo", "2x0"}, {"-halo", "2x2x1x1"}, {"-halo", "twoxtwo"}, {"-halo", "x2"},
	} {
		_, err := parseFlags(args, io.Discard)
		assert.Error(t, err, "%v", args)
	}
	c, err := parseFlags([]string{"-np", "4", "-device", "0"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 0}, []int{localDevice(c, 0), localDevice(c, 3)}, "-device puts every rank on one GPU")
	c.device = -1
	assert.Equal(t, 3, localDevice(c, 3))
	// A step replaces the factor.
	c, err = parseFlags([]string{"-f", "1", "-i", "1K", "-b", "1K", "-e", "4K"}, io.Discard)
	require.NoError(t, err)
	s, err := c.sizes(perf.AllReduce, 4)
	require.NoError(t, err)
	assert.Equal(t, []int64{1024, 2048, 3072, 4096}, s)
}

func TestCheckMax(t *testing.T) {
	c, err := parseFlags([]string{"-checkmax", "64M"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, c.checks(64<<20))
	assert.False(t, c.checks(64<<20+1))
	c.check = false
	assert.False(t, c.checks(8), "-check=false wins")
}

func TestSizesAreWholeBlocks(t *testing.T) {
	c, err := parseFlags([]string{"-b", "100", "-e", "10000", "-f", "3", "-t", "float64"}, io.Discard)
	require.NoError(t, err)
	for _, op := range perf.Ops() {
		s, err := c.sizes(op, 3)
		require.NoError(t, err)
		require.NotEmpty(t, s)
		align := int64(8)
		if op.Blocked() {
			align = 24
		}
		for _, v := range s {
			assert.Zero(t, v%align, "%s size %d", op, v)
			assert.LessOrEqual(t, v, int64(10000))
		}
	}
}

// The run's status is its ranks' worst: a failure, else wrong results.
func TestWorst(t *testing.T) {
	assert.Equal(t, exitError, worst([]int{exitOK, exitWrong, exitError, exitOK}))
	assert.Equal(t, exitWrong, worst([]int{exitOK, exitWrong, exitOK}))
}

// -halo: the grid must hold the run's ranks; by default two dimensions,
// balanced (the larger first), periodic unless -haloperiodic=false.
func TestHaloGrid(t *testing.T) {
	c := mustParse(t)
	for n, want := range map[int][]int{1: {1, 1}, 2: {2, 1}, 4: {2, 2}, 6: {3, 2}, 7: {7, 1}, 8: {4, 2}, 9: {3, 3}} {
		g, err := c.grid(n)
		require.NoError(t, err)
		assert.Equal(t, want, g.Dims, "%d ranks", n)
		assert.Equal(t, []bool{true, true}, g.Periodic)
	}
	c = mustParse(t, "-halo", "2X2x1", "-haloperiodic=false")
	g, err := c.grid(4)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 2, 1}, g.Dims)
	assert.Equal(t, []bool{false, false, false}, g.Periodic)
	_, err = c.grid(8)
	assert.ErrorContains(t, err, "-halo 2x2x1 holds 4 ranks and this run has 8")
}
