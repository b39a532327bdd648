package perf

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSizesDoubling(t *testing.T) {
	s, err := Sizes(8, 1<<20, 2, 0, 4)
	require.NoError(t, err)
	require.Equal(t, int64(8), s[0])
	require.Equal(t, int64(1<<20), s[len(s)-1])
	for i := 1; i < len(s); i++ {
		require.Equal(t, 2*s[i-1], s[i])
	}
}

func TestSizesStepAndAlign(t *testing.T) {
	s, err := Sizes(0, 100, 0, 30, 8)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 24, 56, 88}, s)
	_, err = Sizes(10, 5, 2, 0, 1)
	require.Error(t, err)
	_, err = Sizes(1, 5, 1, 0, 1)
	require.Error(t, err)
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"8": 8, "1K": 1024, "64M": 64 << 20, "1G": 1 << 30, "2kb": 2048} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		require.Equal(t, want, mustParse(t, FormatSize(got)))
	}
	for _, bad := range []string{"", "x", "-1", "1T"} {
		_, err := ParseSize(bad)
		require.Error(t, err, bad)
	}
}

func mustParse(t *testing.T, s string) int64 {
	v, err := ParseSize(s)
	require.NoError(t, err)
	return v
}

func TestBusFactor(t *testing.T) {
	require.InDelta(t, 1.5, BusFactor(AllReduce, 4), 1e-12)
	require.InDelta(t, 0.75, BusFactor(AllGather, 4), 1e-12)
	require.InDelta(t, 0.5, BusFactor(ReduceScatter, 2), 1e-12)
	require.Equal(t, 1.0, BusFactor(Broadcast, 8))
	require.Equal(t, 1.0, BusFactor(AllReduce, 1))
	alg, bus := Bandwidths(AllReduce, 1e9, 4, time.Second)
	require.InDelta(t, 1.0, alg, 1e-12)
	require.InDelta(t, 1.5, bus, 1e-12)
}

// The operations' shapes: which split their buffers per rank, reduce, have a root.
func TestOpShapes(t *testing.T) {
	var blocked, reducing, rooted []Op
	for _, op := range Ops() {
		if op.Blocked() {
			blocked = append(blocked, op)
		}
		if op.Reducing() {
			reducing = append(reducing, op)
		}
		if op.Rooted() {
			rooted = append(rooted, op)
		}
	}
	require.Equal(t, []Op{AllGather, ReduceScatter, AllToAll}, blocked)
	require.Equal(t, []Op{AllReduce, ReduceScatter, Reduce}, reducing)
	require.Equal(t, []Op{Broadcast, Reduce}, rooted)
}

func TestMedianMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 40; n++ {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = time.Duration(r.IntN(1000))
		}
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		want := s[n/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		require.Equal(t, want, Median(ds))
	}
}

func sampleRows() []Row {
	base := &Measure{Time: 20 * time.Microsecond, AlgBW: 1, BusBW: 1.5}
	return []Row{
		{Size: 1024, Count: 256, Type: "float32", RedOp: "sum", Root: -1, Gccl: Measure{Time: 10 * time.Microsecond, AlgBW: 0.1, BusBW: 0.15}, Base: base},
		{Size: 1 << 20, Count: 1 << 18, Type: "float32", RedOp: "sum", Root: -1, Gccl: Measure{Time: 40 * time.Microsecond, AlgBW: 26, BusBW: 39, Wrong: 3}, Base: base},
	}
}

func TestTableAndCSV(t *testing.T) {
	var b bytes.Buffer
	tb := Table{W: &b, Baseline: "nccl"}
	tb.Header("allreduce")
	for _, r := range sampleRows() {
		tb.Row(r)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 5)
	require.Contains(t, lines[1], "busbw")
	require.Contains(t, lines[3], "0.50") // 10us / 20us
	require.Contains(t, lines[4], "2.00")
	b.Reset()
	require.NoError(t, WriteCSV(&b, AllReduce, "nccl", sampleRows()))
	recs, err := csv.NewReader(&b).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Equal(t, len(recs[0]), len(recs[1]))
	require.Equal(t, "3", recs[2][10])
}

func TestPlotIsPNG(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, PlotRows(&b, "allreduce float32", "nccl", sampleRows()))
	img, err := png.Decode(&b)
	require.NoError(t, err)
	require.Equal(t, 1200, img.Bounds().Dx())
	// the gccl line is drawn somewhere in the left panel
	found := false
	for x := 60; x < 580 && !found; x++ {
		for y := 40; y < 450; y++ {
			if r, g, bb, _ := img.At(x, y).RGBA(); r>>8 == uint32(ColorGccl.R) && g>>8 == uint32(ColorGccl.G) && bb>>8 == uint32(ColorGccl.B) {
				found = true
				break
			}
		}
	}
	require.True(t, found, "gccl series not drawn")
}

// TestLabelsArePrintableASCII: basicfont has no em dash or µ; a label never
// shows a missing-glyph box.
func TestLabelsArePrintableASCII(t *testing.T) {
	require.Equal(t, "gccl ? NCCL ?s", printable("gccl — NCCL µs"))
	require.Equal(t, "busbw (GB/s)", printable("busbw (GB/s)"))
}
