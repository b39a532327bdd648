package perf

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMemoryFigures(t *testing.T) {
	// 3 GB in 1 ms is 3000 GB/s; a 1 GB copy in 1 ms moves 2000 GB/s.
	m := Memory{Bytes: 3e9, Time: time.Millisecond, CopySize: 1e9, CopyTime: time.Millisecond, Path: "x"}
	require.InDelta(t, 3000, m.GBs(), 1e-9)
	require.InDelta(t, 2000, m.CopyGBs(), 1e-9)
	require.InDelta(t, 150, m.PctCopy(), 1e-9)
	require.True(t, math.IsNaN(Memory{Bytes: 1, Time: 1}.PctCopy()))
	require.Zero(t, Memory{Bytes: 1}.GBs())
}

func memRows() []Row {
	rows := sampleRows()
	rows[0].Mem = &Memory{Bytes: 2048, Time: 10 * time.Microsecond, CopySize: 1024, CopyTime: 4 * time.Microsecond, Path: "allreduce_oneshot"}
	rows = append(rows, Row{Size: 1 << 24, Count: 1 << 22, Type: "float32", RedOp: "sum", Root: -1, Gccl: Measure{Time: time.Millisecond},
		Mem: &Memory{Bytes: 3 << 24, Time: time.Millisecond, CopySize: 1 << 24, CopyTime: time.Millisecond / 2, Path: "allreduce_pipelined"}})
	return rows
}

// The memory columns follow the baseline's, N/A where a row has no view
// or no baseline measure; the CSV keeps every column under its head.
func TestTableAndCSVWithMemory(t *testing.T) {
	var b bytes.Buffer
	tb := Table{W: &b, Baseline: "nccl", Memory: true}
	tb.Header("allreduce")
	for _, r := range memRows() {
		tb.Row(r)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 6)
	require.Contains(t, lines[1], "memGB/s")
	require.Contains(t, lines[1], "%copy")
	f := strings.Fields(lines[3])
	require.Equal(t, []string{"0.2", "40.0", "0.5", "allreduce_oneshot"}, f[len(f)-4:]) // 2048 B / 10 us vs 2 KiB / 4 us
	require.True(t, strings.HasSuffix(lines[4], "N/A -"))
	f = strings.Fields(lines[5])
	require.Equal(t, []string{"50.3", "75.0", "67.1", "allreduce_pipelined"}, f[len(f)-4:])
	require.Contains(t, lines[5], "N/A") // no baseline measure on that row

	b.Reset()
	require.NoError(t, WriteCSV(&b, AllReduce, "nccl", memRows()))
	recs, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 4)
	head := recs[0]
	require.Equal(t, "pct_copy", head[len(head)-2])
	for _, r := range recs[1:] {
		require.Len(t, r, len(head))
	}
	require.Equal(t, "75.0000", recs[3][len(head)-2])
	require.Equal(t, "", recs[2][len(head)-1])

	med, low, n := MemorySummary(memRows(), 1<<20)
	require.Equal(t, 1, n)
	require.InDelta(t, 75, med, 1e-9)
	require.InDelta(t, 75, low, 1e-9)
	med, low, n = MemorySummary(memRows(), 0)
	require.Equal(t, 2, n)
	require.InDelta(t, 57.5, med, 1e-9)
	require.InDelta(t, 40, low, 1e-9)
}
