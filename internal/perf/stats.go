package perf

import (
	"math"
	"sort"
	"time"
)

// Op names an operation as gccl-perf measures it.
type Op string

// The operations gccl-perf knows.
const (
	AllReduce     Op = "allreduce"
	AllGather     Op = "allgather"
	ReduceScatter Op = "reducescatter"
	Broadcast     Op = "broadcast"
	Reduce        Op = "reduce"
	SendRecv      Op = "sendrecv"
	AllToAll      Op = "alltoall"
	Halo          Op = "halo" // p2p.HaloExchange on a Cartesian grid; the size is one face
)

// Ops lists every operation.
func Ops() []Op {
	return []Op{AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, AllToAll, Halo}
}

// Blocked reports whether op splits its buffers into one block per rank,
// so that its count argument is size / nranks (as nccl-tests counts it).
func (op Op) Blocked() bool { return op == AllGather || op == ReduceScatter || op == AllToAll }

// Reducing reports whether op applies the reduction operator.
func (op Op) Reducing() bool { return op == AllReduce || op == ReduceScatter || op == Reduce }

// Rooted reports whether op has a root.
func (op Op) Rooted() bool { return op == Broadcast || op == Reduce }

// BusFactor is nccl-tests' factor from algorithm bandwidth to bus bandwidth
// for an operation over n ranks: the fraction of the data each rank's link
// must carry, so that busbw is comparable with the hardware's line rate.
// Send/recv and halo count only the bytes a rank sends: their factor is 1.
func BusFactor(op Op, n int) float64 {
	if n <= 1 {
		return 1
	}
	f := float64(n)
	switch op {
	case AllReduce:
		return 2 * (f - 1) / f
	case AllGather, ReduceScatter, AllToAll:
		return (f - 1) / f
	}
	return 1
}

// Median returns the median of ds (0 for none). ds is not modified.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Spread returns the relative interquartile range of ds: (q3-q1)/median, a
// noise figure printed beside each median.
func Spread(ds []time.Duration) float64 {
	if len(ds) < 4 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q1, q3 := s[len(s)/4], s[3*len(s)/4]
	m := Median(s)
	if m == 0 {
		return 0
	}
	return float64(q3-q1) / float64(m)
}

// Bandwidths returns algorithm and bus bandwidth in GB/s (1e9 bytes per second)
// for size bytes moved by op over n ranks in time t.
func Bandwidths(op Op, size int64, n int, t time.Duration) (algbw, busbw float64) {
	if t <= 0 {
		return 0, 0
	}
	algbw = float64(size) / t.Seconds() / 1e9
	return algbw, algbw * BusFactor(op, n)
}

// Ratio returns a/b, or NaN when b is zero.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
