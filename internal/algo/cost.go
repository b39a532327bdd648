package algo

import (
	"math"
	"math/bits"
)

// Link is the alpha-beta model of one transport: Alpha is the latency of one
// message step in microseconds, BytesPerUs the bandwidth of one link.
type Link struct {
	Alpha      float64
	BytesPerUs float64
}

// Default links of the host transports.
var (
	SHMLink = Link{Alpha: 3, BytesPerUs: 8000}  // ~8 GB/s through a shared-memory FIFO
	NetLink = Link{Alpha: 25, BytesPerUs: 1000} // ~1 GB/s TCP
)

// Supports reports whether algorithm a has its own step schedule for kind
// (Tree falls back to Ring for AllGather and ReduceScatter). ZeroCopy has
// none: it is not message passing, and Choose never picks it; the engine
// tries it first where the ranks can map each other's buffers.
func Supports(kind Kind, a Algorithm) bool {
	return a == Ring || a == Direct || a == Tree && kind != AllGather && kind != ReduceScatter
}

// Cost is the modelled time in microseconds of kind with algorithm a moving
// bytes (the total buffer of AllReduce/Broadcast/Reduce, the gathered or
// scattered total of AllGather/ReduceScatter) over nranks ranks.
func Cost(kind Kind, a Algorithm, bytes, nranks int, l Link) float64 {
	if nranks <= 1 {
		return 0
	}
	n, s := float64(nranks), float64(bytes)
	beta := 1 / l.BytesPerUs
	depth := float64(bits.Len(uint(nranks)))
	piece := math.Min(s, DefaultChunkBytes)
	switch a {
	case Ring:
		switch kind {
		case AllReduce:
			return 2*(n-1)*l.Alpha + 2*(n-1)/n*s*beta
		case AllGather, ReduceScatter:
			return (n-1)*l.Alpha + (n-1)/n*s*beta
		default: // pipelined chain: fill the pipe, then stream
			return (n-1)*(l.Alpha+piece*beta) + s*beta
		}
	case Tree:
		switch kind {
		case AllReduce: // up and down both trees, inner nodes move 1.5x
			return 2*depth*(l.Alpha+piece/2*beta) + 2.5*s*beta
		case Broadcast, Reduce:
			return depth*(l.Alpha+piece*beta) + 2*s*beta
		}
	case Direct: // one step, n-1 messages in flight per rank, contending (incast)
		msgs := l.Alpha + (n-1)*l.Alpha/4
		const incast = 1.25
		switch kind {
		case AllReduce:
			return msgs + incast*(n-1)*s*beta
		case AllGather, ReduceScatter:
			return msgs + incast*(n-1)/n*s*beta
		default:
			return msgs + (n-1)*s*beta
		}
	}
	return math.Inf(1)
}

// Choose returns the allowed algorithm of least modelled cost, Ring when
// nothing allowed supports kind.
func Choose(kind Kind, bytes, nranks int, l Link, allowed Allowed) Algorithm {
	best, bestCost := Ring, math.Inf(1)
	for _, a := range []Algorithm{Ring, Tree, Direct} {
		if !allowed.Has(a) || !Supports(kind, a) {
			continue
		}
		if c := Cost(kind, a, bytes, nranks, l); c < bestCost {
			best, bestCost = a, c
		}
	}
	return best
}
