package gpu

import (
	"flag"
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/test/harness"
)

var countsFlag = flag.String("gccl.counts", "0,1,7,1000003", "element counts run for every kind × type × operator × placement")

// largeBytes is the large size: 64 MiB per rank's count.
const largeBytes = 64 << 20

func parseCounts(t *testing.T) []int {
	var out []int
	for _, f := range strings.Split(*countsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			t.Fatalf("-gccl.counts: bad count %q", f)
		}
		out = append(out, n)
	}
	return out
}

// collCases is every kind × type × operator × placement at each count, then
// 64 MiB for a subset of types and operators (all of them with -gccl.full).
func collCases(t *testing.T, nranks int) []harness.Case {
	var cases []harness.Case
	add := func(k string, dt gccl.DataType, op gccl.RedOp, n int, ip bool) {
		seed := uint64(len(cases)) + 1
		cases = append(cases, harness.Case{Kind: k, T: dt, Op: op, Count: n, Root: int(seed*7+3) % nranks, InPlace: ip, Seed: seed})
	}
	matrix := func(n func(gccl.DataType) int, types []gccl.DataType, ops []gccl.RedOp) {
		for _, k := range harness.Kinds {
			for _, dt := range types {
				kops := []gccl.RedOp{gccl.Sum}
				if harness.Reduces(k) {
					kops = ops
				}
				for _, op := range kops {
					add(k, dt, op, n(dt), false)
					add(k, dt, op, n(dt), true)
				}
			}
		}
	}
	for _, n := range parseCounts(t) {
		matrix(func(gccl.DataType) int { return n }, gccl.DataTypes(), gccl.RedOps())
	}
	large := func(dt gccl.DataType) int { return largeBytes / dt.Size() }
	switch {
	case !*largeRun:
	case *full:
		matrix(large, gccl.DataTypes(), gccl.RedOps())
	default:
		matrix(large, []gccl.DataType{gccl.Float32, gccl.BFloat16, gccl.Int8}, []gccl.RedOp{gccl.Sum, gccl.Max, gccl.Avg})
	}
	return cases
}

// TestCollectives runs the whole matrix on one GPU per process, stopping
// every process at the first case that failed anywhere.
func TestCollectives(t *testing.T) {
	cm := world(t)
	s := harness.NewBuffers(t, cm.Device()).Stream()
	for _, c := range collCases(t, cm.Count()) {
		var failures []error
		t.Run(c.String(), func(t *testing.T) {
			if err := c.Run(t, cm, s); err != nil {
				failures = append(failures, err)
			}
		})
		if !harness.Agree(t, failures) {
			return
		}
	}
}
