package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/gccl/gccl/internal/perf"
)

// showProgress rewrites one status line on stderr (rank 0, -progress).
func (r *ranker) showProgress(op perf.Op, size int64, i, n int, lib string) {
	if r.prog != nil {
		fmt.Fprintf(r.prog, "\r# %s %s: size %d/%d (%s)      ", op, lib, i+1, n, perf.FormatSize(size))
	}
}

func (r *ranker) clearProgress() {
	if r.prog != nil {
		fmt.Fprintf(r.prog, "\r%60s\r", "")
	}
}

// summary prints nccl-tests' closing lines: wrong values, average bus
// bandwidth, and against a baseline the geometric mean of the time ratios.
func (r *ranker) summary(res opResult) {
	w := r.out
	fmt.Fprintf(w, "# Out of bounds values : %s%s\n", wrongVerdict(res.gcclWrong), r.uncheckedNote())
	var bw float64
	for _, row := range res.rows {
		bw += row.Gccl.BusBW
	}
	if len(res.rows) > 0 {
		fmt.Fprintf(w, "# Avg bus bandwidth    : %.4f GB/s\n", bw/float64(len(res.rows)))
	}
	if med, low, n := perf.MemorySummary(res.rows, memSummaryMin); n > 0 {
		fmt.Fprintf(w, "# memory traffic     : %.1f%% of the copy's bandwidth (median), lowest %.1f%%, over %d sizes >= %s\n",
			med, low, n, perf.FormatSize(memSummaryMin))
	}
	if res.baseName != "" {
		fmt.Fprintf(w, "# %s out of bounds    : %s\n", res.baseName, wrongVerdict(res.baseWrong))
		all, big := ratioMean(res.rows, 0), ratioMean(res.rows, 1<<20)
		fmt.Fprintf(w, "# time ratio gccl/%s : geomean %s over all sizes, %s at >= 1M (below 1 = gccl faster)\n",
			res.baseName, fmtRatio(all), fmtRatio(big))
	}
	fmt.Fprintln(w)
}

// memSummaryMin is the smallest size the memory-traffic summary counts
// (issue 18 asks for >= 75% of the copy from 16 MiB).
const memSummaryMin = 16 << 20

// writeSummary prints, after every table of a run with a baseline, the
// per-operation summary: banded geometric-mean time ratios and peak bus
// bandwidths (perf.Summarize). Operations the baseline did not run are left out.
func writeSummary(w io.Writer, results []opResult) {
	var sums []perf.Summary
	name := ""
	for _, res := range results {
		if res.baseName == "" || len(res.rows) == 0 {
			continue
		}
		name = res.baseName
		sums = append(sums, perf.Summarize(res.op, res.rows))
	}
	if len(sums) > 0 {
		perf.WriteSummary(w, name, sums)
	}
}

// uncheckedNote says which sizes -checkmax left unchecked.
func (r *ranker) uncheckedNote() string {
	if !r.cfg.check || r.cfg.checkMax == 0 {
		return ""
	}
	return fmt.Sprintf(" (sizes above %s not checked)", perf.FormatSize(r.cfg.checkMax))
}

func fmtRatio(r float64) string {
	if math.IsNaN(r) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", r)
}

func wrongVerdict(n int64) string {
	switch {
	case n < 0:
		return "not checked"
	case n == 0:
		return "0 OK"
	}
	return fmt.Sprintf("%d FAILED", n)
}

// ratioMean is the geometric mean of gccl/baseline time over rows of at
// least minSize bytes (NaN when there are none).
func ratioMean(rows []perf.Row, minSize int64) float64 {
	var sum float64
	n := 0
	for _, row := range rows {
		if row.Base == nil || row.Size < minSize || row.Gccl.Time <= 0 || row.Base.Time <= 0 {
			continue
		}
		sum += math.Log(float64(row.Gccl.Time) / float64(row.Base.Time))
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Exp(sum / float64(n))
}

// writeFiles writes the -csv, -png and -json outputs of every operation
// (the JSON also has the init costs).
// With several operations, the CSV and PNG names get the operation's name
// before the extension (out.csv -> out-allreduce.csv).
func writeFiles(cfg config, results []opResult, init initcost.Summary) error {
	for _, res := range results {
		if len(res.rows) == 0 {
			continue
		}
		if cfg.csv != "" {
			if err := writeFile(perOp(cfg.csv, res.op, len(cfg.ops)), func(w io.Writer) error {
				return perf.WriteCSV(w, res.op, res.baseName, res.rows)
			}); err != nil {
				return err
			}
		}
		if cfg.png != "" {
			title := fmt.Sprintf("%s %v", res.op, cfg.dtype)
			if err := writeFile(perOp(cfg.png, res.op, len(cfg.ops)), func(w io.Writer) error {
				return perf.PlotRows(w, title, res.baseName, res.rows)
			}); err != nil {
				return err
			}
		}
	}
	if cfg.json == "" {
		return nil
	}
	return writeFile(cfg.json, func(w io.Writer) error { return writeJSON(w, results, init) })
}

func perOp(name string, op perf.Op, nops int) string {
	if nops == 1 {
		return name
	}
	ext := filepath.Ext(name)
	return strings.TrimSuffix(name, ext) + "-" + string(op) + ext
}

func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return f.Close()
}

// jsonRow is one row of the -json output; times in microseconds.
type jsonRow struct {
	Op       string   `json:"op"`
	Size     int64    `json:"size_bytes"`
	Count    int      `json:"count"`
	Type     string   `json:"type"`
	RedOp    string   `json:"redop"`
	Root     int      `json:"root"`
	TimeUS   float64  `json:"time_us"`
	AlgBW    float64  `json:"algbw_gbs"`
	BusBW    float64  `json:"busbw_gbs"`
	Wrong    int64    `json:"wrong"`
	Baseline string   `json:"baseline,omitempty"`
	BaseUS   *float64 `json:"baseline_time_us,omitempty"`
	BaseBus  *float64 `json:"baseline_busbw_gbs,omitempty"`
	BaseBad  *int64   `json:"baseline_wrong,omitempty"`
	Ratio    *float64 `json:"time_ratio,omitempty"`
	MemBytes *int64   `json:"mem_bytes,omitempty"`
	MemGBs   *float64 `json:"mem_gbs,omitempty"`
	CopyGBs  *float64 `json:"copy_gbs,omitempty"`
	PctCopy  *float64 `json:"pct_copy,omitempty"`
	GPUPath  string   `json:"gpu_path,omitempty"`
}

// jsonRun is the -json output: the init costs and every row.
type jsonRun struct {
	Init *jsonInit `json:"init"`
	Rows []jsonRow `json:"rows"`
}

func writeJSON(w io.Writer, results []opResult, init initcost.Summary) error {
	rows := []jsonRow{}
	for _, res := range results {
		for _, r := range res.rows {
			j := jsonRow{Op: string(res.op), Size: r.Size, Count: r.Count, Type: r.Type, RedOp: r.RedOp, Root: r.Root,
				TimeUS: us(r.Gccl), AlgBW: r.Gccl.AlgBW, BusBW: r.Gccl.BusBW, Wrong: r.Gccl.Wrong}
			if b := r.Base; b != nil {
				t, bus, bad := us(*b), b.BusBW, b.Wrong
				ratio := perf.Ratio(float64(r.Gccl.Time), float64(b.Time))
				j.Baseline, j.BaseUS, j.BaseBus, j.BaseBad = res.baseName, &t, &bus, &bad
				if !math.IsNaN(ratio) {
					j.Ratio = &ratio
				}
			}
			if m := r.Mem; m != nil {
				bytes, gbs, copyGBs, pct := m.Bytes, m.GBs(), m.CopyGBs(), m.PctCopy()
				j.MemBytes, j.MemGBs, j.CopyGBs, j.GPUPath = &bytes, &gbs, &copyGBs, m.Path
				if !math.IsNaN(pct) {
					j.PctCopy = &pct
				}
			}
			rows = append(rows, j)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonRun{Init: initJSON(init), Rows: rows})
}

func us(m perf.Measure) float64 { return float64(m.Time.Nanoseconds()) / 1e3 }
