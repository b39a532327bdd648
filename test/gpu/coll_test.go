package gpu

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/test/harness"
)

var (
	countsFlag = flag.String("gccl.counts", "0,1,7,1000003", "element counts run for every kind × type × operator × placement")
	typesFlag  = flag.String("gccl.types", "all", "data types of the matrix: all, or a list such as int32,float32,float16,bfloat16,fp8e4m3 (one per class)")
	partFlag   = flag.String("gccl.part", "1/1", "run part i of n of the matrix (i/n: every n-th case from the i-th), so that a long matrix splits across runs")
)

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

func parseTypes(t *testing.T) []gccl.DataType {
	if *typesFlag == "all" {
		return gccl.DataTypes()
	}
	var out []gccl.DataType
	for _, f := range strings.Split(*typesFlag, ",") {
		dt, err := gccl.ParseDataType(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("-gccl.types: %v", err)
		}
		out = append(out, dt)
	}
	return out
}

// parsePart returns -gccl.part as (i, n), 0 <= i < n.
func parsePart(t *testing.T) (int, int) {
	var i, n int
	if _, err := fmt.Sscanf(*partFlag, "%d/%d", &i, &n); err != nil || n < 1 || i < 1 || i > n {
		t.Fatalf("-gccl.part %q: want i/n with 1 <= i <= n", *partFlag)
	}
	return i - 1, n
}

// collCases is every kind × type (-gccl.types) × operator × placement at
// each count, then 64 MiB for a subset of those types and operators (all
// of them with -gccl.full), then only part -gccl.part of that list.
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
	types := parseTypes(t)
	for _, n := range parseCounts(t) {
		matrix(func(gccl.DataType) int { return n }, types, gccl.RedOps())
	}
	large := func(dt gccl.DataType) int { return largeBytes / dt.Size() }
	switch {
	case !*largeRun:
	case *full:
		matrix(large, types, gccl.RedOps())
	default:
		var sub []gccl.DataType
		for _, dt := range types {
			if dt == gccl.Float32 || dt == gccl.BFloat16 || dt == gccl.Int8 {
				sub = append(sub, dt)
			}
		}
		matrix(large, sub, []gccl.RedOp{gccl.Sum, gccl.Max, gccl.Avg})
	}
	i, n := parsePart(t)
	var part []harness.Case
	for k := i; k < len(cases); k += n {
		part = append(part, cases[k])
	}
	return part
}

// TestCollectives runs the matrix on one GPU per process (or every process
// on -gccl.device), every case on the same reused buffers and stream,
// stopping every process at the first case that failed anywhere.
func TestCollectives(t *testing.T) {
	cm := world(t)
	s := harness.NewBuffers(t, cm.Device()).Stream()
	sc := harness.NewScratch(t, cm.Device())
	for _, c := range collCases(t, cm.Count()) {
		var failures []error
		t.Run(c.String(), func(t *testing.T) {
			if err := c.Prepare(cm.Count()).Run(cm, sc, s); err != nil {
				failures = append(failures, err)
			}
		})
		if !harness.Agree(t, failures) {
			return
		}
	}
}
