package soak

import (
	"math/rand/v2"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/test/harness"
)

// kinds are the operations of the soak sequence: the five collectives, a
// ring shift (send to rank+1, receive from rank-1) and all-to-all.
var kinds = append(append([]string{}, harness.Kinds...), "shift", "alltoall")

var intTypes = []gccl.DataType{gccl.Int8, gccl.Uint8, gccl.Int32, gccl.Uint32, gccl.Int64, gccl.Uint64}

// maxCount bounds count so that every buffer fits in slotBytes.
const maxCount = 1 << 16

// draw picks the next operation for nranks ranks. Operations that compute
// take integer types only, so that every result is bit-exact.
func draw(rng *rand.Rand, nranks int) harness.Case {
	o := harness.Case{Kind: kinds[rng.IntN(len(kinds))], Root: rng.IntN(nranks), Peer: 1, InPlace: rng.IntN(2) == 0, Seed: rng.Uint64()}
	if harness.Reduces(o.Kind) {
		o.T = intTypes[rng.IntN(len(intTypes))]
		o.Op = gccl.RedOps()[rng.IntN(len(gccl.RedOps()))]
	} else {
		o.T = gccl.DataTypes()[rng.IntN(len(gccl.DataTypes()))]
	}
	if harness.IsP2P(o.Kind) {
		o.InPlace = false
	}
	switch r := rng.IntN(100); {
	case r < 5:
		o.Count = 0
	case r < 20:
		o.Count = 1 + rng.IntN(8)
	case r < 90:
		o.Count = 1 + rng.IntN(4096)
	default:
		o.Count = 1 + rng.IntN(maxCount)
	}
	if o.Kind == "allgather" || o.Kind == "reducescatter" || o.Kind == "alltoall" {
		o.Count = o.Count / nranks // keep the total within maxCount elements
	}
	return o
}
