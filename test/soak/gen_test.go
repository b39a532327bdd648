package soak

import (
	"fmt"
	"math/rand/v2"

	"github.com/gccl/gccl"
)

// kind is an operation of the soak sequence.
type kind int

const (
	allReduce kind = iota
	broadcast
	reduceOp
	allGather
	reduceScatter
	ringShift // p2p: send to rank+1, receive from rank-1
	allToAll  // p2p
	numKinds
)

var kindNames = [numKinds]string{"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "ringshift", "alltoall"}

func (k kind) String() string { return kindNames[k] }

// computes reports whether k does arithmetic on the data.
func (k kind) computes() bool { return k == allReduce || k == reduceOp || k == reduceScatter }

// op is one drawn operation; every rank draws the same.
type op struct {
	kind    kind
	t       gccl.DataType
	red     gccl.RedOp
	count   int // elements: per rank for allgather (sent), reducescatter (received) and alltoall (per peer)
	root    int
	inPlace bool
	seed    uint64 // of the inputs
}

func (o op) String() string {
	return fmt.Sprintf("%v(%v, %v, count=%d, root=%d, inplace=%v, seed=%#x)", o.kind, o.t, o.red, o.count, o.root, o.inPlace, o.seed)
}

var intTypes = []gccl.DataType{gccl.Int8, gccl.Uint8, gccl.Int32, gccl.Uint32, gccl.Int64, gccl.Uint64}

// maxCount bounds count so that every buffer fits in slotBytes.
const maxCount = 1 << 16

// draw picks the next operation for nranks ranks.
func draw(rng *rand.Rand, nranks int) op {
	o := op{kind: kind(rng.IntN(int(numKinds))), root: rng.IntN(nranks), inPlace: rng.IntN(2) == 0, seed: rng.Uint64()}
	if o.kind.computes() {
		o.t = intTypes[rng.IntN(len(intTypes))]
		o.red = gccl.RedOps()[rng.IntN(len(gccl.RedOps()))]
	} else {
		o.t = gccl.DataTypes()[rng.IntN(len(gccl.DataTypes()))]
	}
	switch r := rng.IntN(100); {
	case r < 5:
		o.count = 0
	case r < 20:
		o.count = 1 + rng.IntN(8)
	case r < 90:
		o.count = 1 + rng.IntN(4096)
	default:
		o.count = 1 + rng.IntN(maxCount)
	}
	if o.kind == allGather || o.kind == reduceScatter || o.kind == allToAll {
		o.count = o.count / nranks // keep the total within maxCount elements
	}
	return o
}
