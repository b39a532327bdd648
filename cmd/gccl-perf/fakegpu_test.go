package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/check"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/clock"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/report"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRanker is one rank's ranker on a fake GPU measuring fake as "gccl"
// (and base as the baseline when not nil), with the real checker.
func fakeRanker(t *testing.T, args []string, fake *perftest.Lib, base *perftest.Lib) (*ranker, *bytes.Buffer) {
	t.Helper()
	cfg := mustParse(t, append([]string{"-timeout", "10s"}, args...)...)
	var out bytes.Buffer
	d := fake.Dev
	clk, err := clock.New(cfg.clock(), d, fake.Stream)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, clk.Close()) })
	r := &ranker{cfg: cfg, nranks: 1, dev: d, reg: perftest.CacheRegister(perftest.OneRank(t, d)), gccl: fake, clk: clk, out: &out, check: check.CountWrong,
		x: exchange.NewLocal(1, 10*time.Second).Rank(0)}
	if base != nil {
		r.base = base
	}
	r.prof, err = newProfRange(cfg, d, r.x)
	require.NoError(t, err)
	return r, &out
}

func fakePair(t *testing.T, delay time.Duration) (*perftest.Lib, *perftest.Lib) {
	d, s := perftest.GPU(t)
	return perftest.NewLib("fake", d, s, delay), perftest.NewLib("fakebase", d, s, delay)
}

// A sweep on the fake GPU, eager and through graphs, with and without
// registration: the one-rank broadcast is checked element by element, the
// times are the stream's, and registrations are undone.
func TestSweepOnFakeGPU(t *testing.T) {
	for _, mode := range [][]string{{}, {"-graph", "-launches", "2"}, {"-register"}, {"-graph", "-register", "-inplace"}} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			fake, base := fakePair(t, 200*time.Microsecond)
			args := append([]string{"-op", "broadcast", "-b", "1K", "-e", "16K", "-f", "4", "-n", "3", "-w", "1"}, mode...)
			r, out := fakeRanker(t, args, fake, base)
			res, err := r.sweep(perf.Broadcast)
			require.NoError(t, err)
			require.Len(t, res.Rows, 3, out.String())
			for _, row := range res.Rows {
				assert.Zero(t, row.Gccl.Wrong, "size %d", row.Size)
				require.NotNil(t, row.Base)
				assert.Zero(t, row.Base.Wrong, "size %d", row.Size)
				assert.GreaterOrEqual(t, row.Gccl.Time, 200*time.Microsecond, "size %d", row.Size)
			}
			head := strings.SplitN(out.String(), "\n", 2)[0]
			if r.cfg.register {
				assert.Contains(t, head, "buffers registered with gccl and fakebase")
			} else {
				assert.Contains(t, head, "buffers not registered")
			}
			if r.cfg.graph {
				assert.Contains(t, head, "graph of 3 ops")
			} else {
				assert.Contains(t, head, "eager")
			}
			assert.Zero(t, base.Registered(), "the baseline's registration is undone at the sweep's end")
		})
	}
}

// A library that leaves the last element unwritten is caught, eagerly and
// in a graph (where the result after the timed launches is checked again).
func TestSweepOnFakeGPUCountsWrong(t *testing.T) {
	for _, mode := range []string{"-graph=false", "-graph=true"} {
		fake, _ := fakePair(t, 0)
		fake.Short = true
		r, out := fakeRanker(t, []string{"-op", "broadcast", "-b", "64", "-e", "256", "-n", "2", "-w", "0", mode}, fake, nil)
		res, err := r.sweep(perf.Broadcast)
		require.NoError(t, err)
		require.Len(t, res.Rows, 3)
		for _, row := range res.Rows {
			assert.EqualValues(t, 1, row.Gccl.Wrong, "%s size %d", mode, row.Size)
		}
		assert.Contains(t, out.String(), "3 FAILED")
	}
}

// Halo's check: a library that puts each face into the right halo passes,
// one that puts them into the wrong side's halos fails on every element,
// eagerly and in a graph.
func TestSweepOnFakeGPUChecksHaloFaces(t *testing.T) {
	for _, mode := range []string{"-graph=false", "-graph=true"} {
		for _, misplace := range []bool{false, true} {
			fake, _ := fakePair(t, 0)
			fake.Misplace = misplace
			r, out := fakeRanker(t, []string{"-op", "halo", "-halo", "1x1x1", "-b", "64", "-e", "256", "-n", "2", "-w", "0", mode}, fake, nil)
			res, err := r.sweep(perf.Halo)
			require.NoError(t, err)
			require.Len(t, res.Rows, 3, out.String())
			for _, row := range res.Rows {
				want := int64(0)
				if misplace {
					want = 6 * row.Size / 4 // every element of the 6 halos
				}
				assert.Equal(t, want, row.Gccl.Wrong, "%s misplace=%v size %d", mode, misplace, row.Size)
			}
		}
	}
}

// A failing library fails the sweep with its error, every rank agreeing.
func TestSweepOnFakeGPUFailure(t *testing.T) {
	fake, _ := fakePair(t, 0)
	fake.Fail = io.ErrUnexpectedEOF
	r, _ := fakeRanker(t, []string{"-op", "broadcast", "-b", "64", "-e", "64", "-graph"}, fake, nil)
	_, err := r.sweep(perf.Broadcast)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// The summary covers the operations the baseline ran, after every table.
func TestWriteSummaryOfRun(t *testing.T) {
	fake, base := fakePair(t, 100*time.Microsecond)
	r, out := fakeRanker(t, []string{"-op", "all", "-b", "8", "-e", "64", "-f", "8", "-n", "2", "-w", "0"}, fake, base)
	r.cfg.ops = []perf.Op{perf.Broadcast, perf.SendRecv}
	results, status := r.sweepAll(io.Discard)
	require.Equal(t, exitOK, status)
	report.WriteRunSummary(out, results)
	i := strings.Index(out.String(), "# Summary: time ratio gccl/fakebase")
	require.Positive(t, i, out.String())
	summary := out.String()[i:]
	assert.Contains(t, summary, " broadcast ")
	assert.Contains(t, summary, " sendrecv ")
	assert.Contains(t, summary, "(2)", "two sizes in the small band")

	var none bytes.Buffer
	report.WriteRunSummary(&none, []report.Result{{Op: perf.AllReduce, Rows: results[0].Rows}})
	assert.Empty(t, none.String(), "no summary without a baseline")
}

// stuckReg is a registrar whose deregistration fails.
type stuckReg struct{ *perftest.Lib }

func (s stuckReg) Deregister(p uintptr) error { return errors.New("deregistration refused") }

// A registration that cannot be undone fails the sweep instead of being
// ignored.
func TestArenaReleaseFailures(t *testing.T) {
	fake, base := fakePair(t, 0)
	r, _ := fakeRanker(t, []string{"-op", "broadcast", "-b", "64", "-e", "64", "-n", "1", "-register"}, fake, nil)
	r.base = stuckReg{base}
	_, err := r.sweep(perf.Broadcast)
	assert.ErrorContains(t, err, "releasing the buffers")
	assert.ErrorContains(t, err, "deregistration refused")
}

// -profilerange brackets each library's timed work at each size in one
// profiler range and leaves none open; the host backend refuses it.
func TestProfileRanges(t *testing.T) {
	for _, mode := range [][]string{{}, {"-graph", "-launches", "2"}} {
		fake, base := fakePair(t, 0)
		args := append([]string{"-op", "broadcast", "-b", "1K", "-e", "16K", "-f", "4", "-n", "3", "-w", "1", "-profilerange"}, mode...)
		r, out := fakeRanker(t, args, fake, base)
		drv := perftest.Driver(fake.Dev).(*cudafake.Fake)
		_, err := r.sweep(perf.Broadcast)
		require.NoError(t, err, out.String())
		closed, open := drv.ProfilerRanges()
		assert.Equal(t, 3*2, closed, "one range per library per size %v", mode)
		assert.False(t, open, "a range left open %v", mode)
	}
	fake, base := fakePair(t, 0)
	r, _ := fakeRanker(t, []string{"-op", "broadcast", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0"}, fake, base)
	_, err := r.sweep(perf.Broadcast)
	require.NoError(t, err)
	closed, _ := perftest.Driver(fake.Dev).(*cudafake.Fake).ProfilerRanges()
	assert.Zero(t, closed, "no range without -profilerange")

	host, err := device.NewHost(0, time.Second)
	require.NoError(t, err)
	_, err = newProfRange(mustParse(t, "-profilerange"), host, exchange.NewLocal(1, time.Second).Rank(0))
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	assert.ErrorContains(t, err, "drop -profilerange")
}
