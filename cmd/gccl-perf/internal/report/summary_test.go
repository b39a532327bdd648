package report

import (
	"math"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/perf"
	"github.com/stretchr/testify/assert"
)

func TestRatioMean(t *testing.T) {
	m := func(us int) perf.Measure { return perf.Measure{Time: time.Duration(us) * time.Microsecond} }
	b := func(us int) *perf.Measure { x := m(us); return &x }
	rows := []perf.Row{
		{Size: 1024, Gccl: m(10), Base: b(40)},    // 0.25
		{Size: 1 << 20, Gccl: m(30), Base: b(10)}, // 3
		{Size: 2 << 20, Gccl: m(20), Base: b(15)}, // 4/3
		{Size: 4 << 20, Gccl: m(20)},              // no baseline: ignored
	}
	assert.InDelta(t, 1.0, ratioMean(rows, 0), 1e-9)
	assert.InDelta(t, 2.0, ratioMean(rows, 1<<20), 1e-9)
	assert.True(t, math.IsNaN(ratioMean(rows, 8<<20)))
	assert.Equal(t, "n/a", fmtRatio(math.NaN()))
	assert.Equal(t, "1.500", fmtRatio(1.5))
	assert.Equal(t, "0 OK", wrongVerdict(0))
	assert.Equal(t, "not checked", wrongVerdict(-1))
	assert.Equal(t, "5 FAILED", wrongVerdict(5))
	assert.Equal(t, int64(3), addWrong(3, -1), "an unchecked row adds nothing")
	assert.Equal(t, int64(2), addWrong(-1, 2), "the first checked row starts the count")
	assert.Equal(t, int64(-1), addWrong(-1, -1), "nothing checked yet")
	assert.Equal(t, int64(5), addWrong(3, 2))
	assert.Equal(t, "x-alltoall.csv", perOp("x.csv", perf.AllToAll, 2))
	assert.Equal(t, "x.csv", perOp("x.csv", perf.AllToAll, 1))
}
