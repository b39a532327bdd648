package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/gccl/gccl/internal/perf"
)

// Files are the files a run writes besides its tables (-csv, -png and
// -json; "" writes none) and what their names and titles need.
type Files struct {
	CSV, PNG, JSON string
	Ops            int           // operations in the run
	Type           gccl.DataType // the run's data type, in the plots' titles
}

// Write writes the CSV and PNG of every operation and the JSON of the run
// (the JSON also has the init costs). With several operations, the CSV and
// PNG names get the operation's name before the extension (out.csv ->
// out-allreduce.csv).
func (f Files) Write(results []Result, init initcost.Summary) error {
	for _, res := range results {
		if len(res.Rows) == 0 {
			continue
		}
		if f.CSV != "" {
			if err := writeFile(perOp(f.CSV, res.Op, f.Ops), func(w io.Writer) error {
				return perf.WriteCSV(w, res.Op, res.Baseline, res.Rows)
			}); err != nil {
				return err
			}
		}
		if f.PNG != "" {
			title := fmt.Sprintf("%s %v", res.Op, f.Type)
			if err := writeFile(perOp(f.PNG, res.Op, f.Ops), func(w io.Writer) error {
				return perf.PlotRows(w, title, res.Baseline, res.Rows)
			}); err != nil {
				return err
			}
		}
	}
	if f.JSON == "" {
		return nil
	}
	return writeFile(f.JSON, func(w io.Writer) error { return writeJSON(w, results, init) })
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

func writeJSON(w io.Writer, results []Result, init initcost.Summary) error {
	rows := []jsonRow{}
	for _, res := range results {
		for _, r := range res.Rows {
			j := jsonRow{Op: string(res.Op), Size: r.Size, Count: r.Count, Type: r.Type, RedOp: r.RedOp, Root: r.Root,
				TimeUS: us(r.Gccl), AlgBW: r.Gccl.AlgBW, BusBW: r.Gccl.BusBW, Wrong: r.Gccl.Wrong}
			if b := r.Base; b != nil {
				t, bus, bad := us(*b), b.BusBW, b.Wrong
				ratio := perf.Ratio(float64(r.Gccl.Time), float64(b.Time))
				j.Baseline, j.BaseUS, j.BaseBus, j.BaseBad = res.Baseline, &t, &bus, &bad
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

// jsonInit is the -json output's "init" object; times in milliseconds,
// memory in bytes (null: not measured).
type jsonInit struct {
	Gccl     jsonInitLib  `json:"gccl"`
	Baseline *jsonInitLib `json:"baseline,omitempty"`
}

type jsonInitLib struct {
	Library  string  `json:"library"`
	TimeMS   float64 `json:"time_ms"`        // the slowest rank's
	MedianMS float64 `json:"median_time_ms"` // over ranks
	MemInit  *int64  `json:"mem_init_bytes"`
	MemFirst *int64  `json:"mem_after_first_op_bytes"`
}

func initJSON(s initcost.Summary) *jsonInit {
	j := &jsonInit{Gccl: initLibJSON(s.Gccl)}
	if s.Base != nil {
		b := initLibJSON(*s.Base)
		j.Baseline = &b
	}
	return j
}

func initLibJSON(s initcost.Stats) jsonInitLib {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	bytes := func(b int64) *int64 {
		if b < 0 {
			return nil
		}
		return &b
	}
	return jsonInitLib{Library: s.Name, TimeMS: ms(s.MaxTime), MedianMS: ms(s.MedianTime),
		MemInit: bytes(s.MemInit), MemFirst: bytes(s.MemFirst)}
}
