package check

import (
	"github.com/gccl/gccl/cmd/gccl-perf/internal/layout"
	"github.com/gccl/gccl/internal/perf"
)

// source is one piece of an expected result: the reduction (or, with one
// rank listed, a copy) of elements [from, from+n) of the inputs of ranks.
type source struct {
	ranks []int
	from  int
	n     int
	at    int // where the piece lands in the result, in elements
}

// expected describes the result rank must hold after the operation laid
// out by l, as pieces of the ranks' inputs; nil means nothing to check on
// this rank.
func expected(l layout.Layout, rank, nranks, root int) []source {
	all := make([]int, nranks)
	for i := range all {
		all[i] = i
	}
	switch l.Op {
	case perf.AllReduce:
		return []source{{ranks: all, n: l.Count}}
	case perf.Reduce:
		if rank != root {
			return nil
		}
		return []source{{ranks: all, n: l.Count}}
	case perf.Broadcast:
		return []source{{ranks: []int{root}, n: l.Count}}
	case perf.SendRecv:
		return []source{{ranks: []int{(rank + nranks - 1) % nranks}, n: l.Count}}
	case perf.ReduceScatter:
		return []source{{ranks: all, from: rank * l.Count, n: l.Count}}
	case perf.Halo:
		return halos(l, rank)
	}
	var out []source // all-gather and all-to-all: one block from each rank
	for j := range nranks {
		from := 0
		if l.Op == perf.AllToAll {
			from = rank * l.Count
		}
		out = append(out, source{ranks: []int{j}, from: from, n: l.Count, at: j * l.Count})
	}
	return out
}

// halos is halo's result on rank: halo i holds face i^1 of the neighbour
// on side i (its face toward this rank); a halo past the edge of a
// non-periodic grid is not checked.
func halos(l layout.Layout, rank int) []source {
	var out []source
	for i, nb := range l.Grid.Neighbors(rank) {
		if nb >= 0 {
			out = append(out, source{ranks: []int{nb}, from: (i ^ 1) * l.Count, n: l.Count, at: i * l.Count})
		}
	}
	return out
}
