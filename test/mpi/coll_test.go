package mpi

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
)

// collCases is the matrix: every kind × type × operator × placement at a
// count that no rank count divides evenly, then every kind at the edge
// counts (0, 1, nranks±1, 3·nranks+2) for two types, and the large counts.
func collCases(nranks int) []harness.Case {
	var cases []harness.Case
	add := func(k string, t gccl.DataType, op gccl.RedOp, n int, inPlace bool) {
		root := (len(cases)*7 + 3) % nranks
		cases = append(cases, harness.Case{Kind: k, T: t, Op: op, Count: n, Root: root, InPlace: inPlace, Seed: uint64(len(cases)) + 1})
	}
	for _, k := range harness.Kinds {
		for _, t := range gccl.DataTypes() {
			ops := []gccl.RedOp{gccl.Sum}
			if harness.Reduces(k) {
				ops = gccl.RedOps()
			}
			for _, op := range ops {
				for _, ip := range []bool{false, true} {
					add(k, t, op, 37, ip)
				}
			}
		}
		for _, n := range []int{0, 1, nranks - 1, nranks + 1, 3*nranks + 2} {
			for _, t := range []gccl.DataType{gccl.Float32, gccl.Int8} {
				add(k, t, gccl.Sum, max(n, 0), n%2 == 0)
			}
		}
		// The large counts: 1000003 elements of every type (placements
		// alternate by type; with more than 4 ranks on this 2-core CI, two
		// types), then 8 MiB of a float, a small float and an integer type,
		// with the kind's heaviest operator.
		big, mib8 := gccl.DataTypes(), []gccl.DataType{gccl.Float32, gccl.BFloat16, gccl.Int32}
		if nranks > 4 {
			big, mib8 = []gccl.DataType{gccl.Float32, gccl.Int8}, mib8[:1]
		}
		for i, t := range big {
			add(k, t, gccl.Sum, 1_000_003, i%2 == 0)
		}
		for i, t := range mib8 {
			op := gccl.Sum
			if harness.Reduces(k) {
				op = []gccl.RedOp{gccl.Sum, gccl.Avg, gccl.Max}[i]
			}
			add(k, t, op, (8<<20)/t.Size(), i%2 == 1)
		}
	}
	return cases
}

// runCases runs cases on cm, each on a stream of its own, and returns the
// failures; with limit > 0 it stops after limit+1 of them (every process
// fails alike when an operation errors, so they stop together).
func runCases(t *testing.T, cm *comm.Comm, cases []harness.Case, limit int) []error {
	var failures []error
	sc := harness.NewScratch(t, cm.Device())
	for _, c := range cases {
		s := harness.NewBuffers(t, cm.Device()).Stream()
		if err := c.Prepare(cm.Count()).Run(cm, sc, s); err != nil {
			failures = append(failures, err)
			if limit > 0 && len(failures) > limit {
				break
			}
		}
	}
	return failures
}

func TestCollectives(t *testing.T) {
	cm := world(t)
	harness.Agree(t, runCases(t, cm, collCases(cm.Count()), 50))
}

// TestCollectivesOnSplit runs the float32 part of the matrix on each half
// of the world (halves talk only among themselves).
func TestCollectivesOnSplit(t *testing.T) {
	rank, size := mpiboot.World()
	sub, err := world(t).Split(b2i(rank >= size/2), rank, config())
	if err != nil {
		harness.Agree(t, []error{err})
		return
	}
	defer sub.Close()
	var f32 []harness.Case
	for _, c := range collCases(sub.Count()) {
		if c.T == gccl.Float32 {
			f32 = append(f32, c)
		}
	}
	harness.Agree(t, runCases(t, sub, f32, 0))
}
