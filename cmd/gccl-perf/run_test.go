package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/check"
	"github.com/gccl/gccl/internal/nccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tableRow is a data line of the printed table.
type tableRow struct {
	size  int64
	wrong string
}

// tables splits the output into each operation's data rows, by title.
func tables(t *testing.T, out string) map[string][]tableRow {
	got := map[string][]tableRow{}
	cur := ""
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "# gccl-perf "); ok {
			cur = strings.SplitN(rest, ":", 2)[0]
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		require.GreaterOrEqual(t, len(f), 9, "row %q", line)
		size, err := strconv.ParseInt(f[0], 10, 64)
		require.NoError(t, err)
		got[cur] = append(got[cur], tableRow{size: size, wrong: f[8]})
	}
	return got
}

// runJSON is what the tests read of the -json output.
type runJSON struct {
	Init *struct {
		Gccl     initJSON  `json:"gccl"`
		Baseline *initJSON `json:"baseline"`
	} `json:"init"`
	Rows []struct {
		TimeUS float64 `json:"time_us"`
	} `json:"rows"`
}

// initJSON is one library's init costs in the -json output.
type initJSON struct {
	Library  string  `json:"library"`
	TimeMS   float64 `json:"time_ms"`
	MedianMS float64 `json:"median_time_ms"`
	MemInit  *int64  `json:"mem_init_bytes"`
	MemFirst *int64  `json:"mem_after_first_op_bytes"`
}

func mustParse(t *testing.T, args ...string) config {
	c, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	return c
}

func TestEndToEndTwoRanks(t *testing.T) {
	dir := t.TempDir()
	csvPath, jsonPath := filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.json")
	cfg := mustParse(t, "-np", "2", "-b", "8", "-e", "4K", "-f", "4", "-n", "3", "-w", "1", "-timeout", "30s",
		"-csv", csvPath, "-json", jsonPath, "-png", filepath.Join(dir, "r.png"), "-progress")
	var out, errs bytes.Buffer
	require.Equal(t, exitOK, run(cfg, &out, &errs, hooks{check: check.CountWrong}), "stderr: %s", errs.String())
	rows := tables(t, out.String())["allreduce"]
	require.Len(t, rows, 5, out.String()) // 8, 32, 128, 512, 2K
	for i, r := range rows {
		assert.Equal(t, int64(8)<<(2*i), r.size)
		assert.Equal(t, "0", r.wrong)
	}
	assert.Contains(t, out.String(), "# Out of bounds values : 0 OK")
	assert.Contains(t, errs.String(), "allreduce gccl", "progress on stderr")

	f, err := os.Open(csvPath)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	assert.Len(t, recs, 1+5)
	var js runJSON
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &js))
	require.Len(t, js.Rows, 5)
	assert.Positive(t, js.Rows[4].TimeUS)
	require.NotNil(t, js.Init)
	assert.Positive(t, js.Init.Gccl.TimeMS)
	st, err := os.Stat(filepath.Join(dir, "r.png"))
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}

func TestEndToEndEveryOperation(t *testing.T) {
	for _, inplace := range []string{"-inplace=false", "-inplace=true"} {
		cfg := mustParse(t, "-np", "3", "-op", "all", "-b", "12", "-e", "3000", "-f", "8", "-n", "2", "-w", "0",
			"-t", "int32", "-o", "max", "-r", "2", "-timeout", "30s", inplace)
		var out, errs bytes.Buffer
		require.Equal(t, exitOK, run(cfg, &out, &errs, hooks{check: check.CountWrong}), "stderr: %s", errs.String())
		got := tables(t, out.String())
		for _, op := range cfg.ops {
			if inplace == "-inplace=true" && (op == "sendrecv" || op == "alltoall" || op == "halo") {
				assert.Contains(t, out.String(), "# "+string(op)+" skipped")
				continue
			}
			require.Len(t, got[string(op)], 3, "%s %s:\n%s", op, inplace, out.String())
			for _, r := range got[string(op)] {
				assert.Equal(t, "0", r.wrong, "%s %s size %d", op, inplace, r.size)
			}
		}
	}
}

// Halo on the host backend, 4 goroutine ranks on 1-, 2- and 3-D grids,
// periodic and open: every halo element is checked against the face its
// neighbour sent, the size is one face, and algbw counts the faces a rank
// sends (busbw equals it).
func TestEndToEndHalo(t *testing.T) {
	for _, tc := range []struct {
		grid  []string
		faces float64 // a rank sends, on average
	}{
		{nil, 4}, // 2x2, periodic
		{[]string{"-halo", "4"}, 2},
		{[]string{"-halo", "2x2x1"}, 6}, // a rank is its own neighbour along the third
		{[]string{"-halo", "1x4", "-haloperiodic=false"}, 1.5},
	} {
		grid := tc.grid
		dir := t.TempDir()
		jsonPath := filepath.Join(dir, "h.json")
		args := append([]string{"-np", "4", "-op", "halo", "-b", "1K", "-e", "64K", "-f", "8", "-n", "2", "-w", "0",
			"-t", "int32", "-timeout", "30s", "-json", jsonPath}, grid...)
		cfg := mustParse(t, args...)
		var out, errs bytes.Buffer
		require.Equal(t, exitOK, run(cfg, &out, &errs, hooks{check: check.CountWrong}), "%v stderr: %s", grid, errs.String())
		rows := tables(t, out.String())["halo"]
		require.Len(t, rows, 3, "%v:\n%s", grid, out.String())
		for i, r := range rows {
			assert.Equal(t, int64(1024)<<(3*i), r.size, "the size is one face")
			assert.Equal(t, "0", r.wrong, "%v size %d", grid, r.size)
		}
		var js struct {
			Rows []struct {
				Size  int64   `json:"size_bytes"`
				Time  float64 `json:"time_us"`
				AlgBW float64 `json:"algbw_gbs"`
				BusBW float64 `json:"busbw_gbs"`
			} `json:"rows"`
		}
		b, err := os.ReadFile(jsonPath)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &js))
		require.Len(t, js.Rows, 3)
		for _, r := range js.Rows {
			assert.InEpsilon(t, tc.faces*float64(r.Size)/r.Time/1e3, r.AlgBW, 0.01, "%v: faces a rank sends / time", grid)
			assert.Equal(t, r.AlgBW, r.BusBW)
		}
	}
	var errs bytes.Buffer
	cfg := mustParse(t, "-np", "4", "-op", "halo", "-halo", "3x1", "-b", "1K", "-e", "1K", "-timeout", "10s")
	require.Equal(t, exitError, run(cfg, io.Discard, &errs, hooks{check: check.CountWrong}))
	assert.Contains(t, errs.String(), "-halo 3x1 holds 3 ranks and this run has 4")
}

// A wrong result must be counted: the injected checker corrupts what it is
// given and defers to the real one.
func TestEndToEndCountsCorruptedResults(t *testing.T) {
	cfg := mustParse(t, "-np", "2", "-b", "1K", "-e", "4K", "-n", "2", "-w", "0", "-timeout", "30s")
	corrupt := func(got, want []byte, ty gccl.DataType, nranks int) int64 {
		bad := append([]byte{}, got...)
		bad[len(bad)-1] ^= 0x7F // the last element's top byte
		return check.CountWrong(bad, want, ty, nranks)
	}
	var out bytes.Buffer
	require.Equal(t, exitWrong, run(cfg, &out, io.Discard, hooks{check: corrupt}))
	rows := tables(t, out.String())["allreduce"]
	require.Len(t, rows, 3)
	for _, r := range rows {
		assert.Equal(t, "2", r.wrong, "one element per rank, two ranks")
	}
	assert.Contains(t, out.String(), "6 FAILED")

	// -checkmax: sizes above it are not checked, and the wrong ones below
	// it still fail the run.
	cfg.checkMax = 2048
	out.Reset()
	require.Equal(t, exitWrong, run(cfg, &out, io.Discard, hooks{check: corrupt}))
	rows = tables(t, out.String())["allreduce"]
	require.Len(t, rows, 3)
	assert.Equal(t, []string{"2", "2", "N/A"}, []string{rows[0].wrong, rows[1].wrong, rows[2].wrong})
	assert.Contains(t, out.String(), "4 FAILED (sizes above 2K not checked)")

	cfg.check, cfg.checkMax = false, 0
	out.Reset()
	require.Equal(t, exitOK, run(cfg, &out, io.Discard, hooks{check: corrupt}))
	for _, r := range tables(t, out.String())["allreduce"] {
		assert.Equal(t, "N/A", r.wrong)
	}
}

func TestGraphOnHostIsRefused(t *testing.T) {
	cfg := mustParse(t, "-np", "2", "-graph", "-timeout", "10s")
	var errs bytes.Buffer
	start := time.Now()
	require.Equal(t, exitError, run(cfg, io.Discard, &errs, hooks{check: check.CountWrong}))
	assert.Contains(t, errs.String(), "not supported on host")
	assert.Less(t, time.Since(start), 5*time.Second)

	cfg = mustParse(t, "-np", "2", "-op", "broadcast", "-r", "2", "-timeout", "10s")
	errs.Reset()
	require.Equal(t, exitError, run(cfg, io.Discard, &errs, hooks{check: check.CountWrong}))
	assert.Contains(t, errs.String(), "-r 2 is not a rank")

	cfg = mustParse(t, "-np", "2", "-baseline", "nccl", "-timeout", "10s")
	errs.Reset()
	require.Equal(t, exitError, run(cfg, io.Discard, &errs, hooks{check: check.CountWrong}))
	assert.Contains(t, errs.String(), "baseline nccl") // not built in, or no libnccl/GPU here
}

// -register on the host backend: bufreg.MemAlloc memory registered with
// gccl, results still right, the header says so, and every registration
// is undone before MemFree (which refuses registered memory, failing the run).
func TestEndToEndRegisteredHost(t *testing.T) {
	cfg := mustParse(t, "-np", "3", "-op", "all", "-b", "96", "-e", "6K", "-f", "8", "-n", "2", "-w", "1",
		"-t", "int32", "-register", "-timeout", "30s")
	var out, errs bytes.Buffer
	require.Equal(t, exitOK, run(cfg, &out, &errs, hooks{check: check.CountWrong}), "stderr: %s", errs.String())
	got := tables(t, out.String())
	for _, op := range cfg.ops {
		require.Len(t, got[string(op)], 3, "%s:\n%s", op, out.String())
		for _, r := range got[string(op)] {
			assert.Equal(t, "0", r.wrong, "%s size %d", op, r.size)
		}
	}
	assert.Equal(t, len(cfg.ops), strings.Count(out.String(), "buffers registered with gccl,")+
		strings.Count(out.String(), "buffers registered with gccl\n"), out.String())
	assert.Contains(t, out.String(), "host-timed")
}

// -op all writes one CSV and one PNG per operation, named after it.
func TestOpAllFilesPerOperation(t *testing.T) {
	dir := t.TempDir()
	cfg := mustParse(t, "-np", "2", "-op", "all", "-b", "64", "-e", "256", "-n", "1", "-w", "0", "-timeout", "30s",
		"-csv", filepath.Join(dir, "r.csv"), "-png", filepath.Join(dir, "r.png"))
	require.Equal(t, exitOK, run(cfg, io.Discard, io.Discard, hooks{check: check.CountWrong}))
	for _, op := range cfg.ops {
		f, err := os.Open(filepath.Join(dir, "r-"+string(op)+".csv"))
		require.NoError(t, err, op)
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		require.NoError(t, err)
		require.Len(t, recs, 1+3, op) // 64, 128, 256
		for _, rec := range recs[1:] {
			assert.Equal(t, string(op), rec[0])
		}
		st, err := os.Stat(filepath.Join(dir, "r-"+string(op)+".png"))
		require.NoError(t, err, op)
		assert.Positive(t, st.Size())
	}
	_, err := os.Stat(filepath.Join(dir, "r.csv"))
	assert.True(t, os.IsNotExist(err), "no unsuffixed file with -op all")
}

// Without libnccl.so.2, -baseline nccl fails fast on every rank, saying why.
func TestNCCLBaselineWithoutLibrary(t *testing.T) {
	if nl, err := nccl.Load(); err == nil {
		t.Skipf("libnccl.so.2 is present (NCCL %s); the missing-library path is not exercised", nccl.VersionString(nl.Version()))
	}
	cfg := mustParse(t, "-np", "2", "-baseline", "nccl", "-b", "1K", "-e", "1K", "-timeout", "10s")
	var errs bytes.Buffer
	start := time.Now()
	require.Equal(t, exitError, run(cfg, io.Discard, &errs, hooks{check: check.CountWrong}))
	assert.Contains(t, errs.String(), "baseline nccl: libnccl.so.2 not found")
	assert.Less(t, time.Since(start), 8*time.Second, "a missing library must fail fast on every rank")
}
