package random

import (
	"fmt"
	"math/rand/v2"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/test/harness"
)

// The communicators of a run, by index: every rank is in each.
const (
	worldComm = iota // mpiboot.NewComm or InitRank over every rank
	dupComm          // a second one over the same ranks
	splitComm        // world split by rank parity, ranked in reverse
	numComms
)

var commNames = [numComms]string{"world", "dup", "split"}

// op is one drawn operation. Every rank draws the same; roots and peers
// are drawn raw and bound to the size of the communicator (bind), since
// the two halves of the split communicator may differ in size.
type op struct {
	c           harness.Case
	comm        int  // worldComm, dupComm or splitComm
	stream      int  // of the rank's streams (drawn raw, then bound by drawStreams)
	align       int  // elements the buffers start past an aligned address
	deviceScale bool // PreMulSum's scalar lies in device memory, not host (immediate)
	root, peer  int  // raw
}

// bind returns the Case for a communicator of size ranks.
func (o op) bind(size int) harness.Case {
	c := o.c
	c.Root = o.root % size
	switch c.Kind {
	case "sendrecv":
		c.Peer = c.Root
		if size > 1 {
			c.Peer = (c.Root + 1 + o.peer%(size-1)) % size
		}
	case "shift":
		c.Peer = o.peer % size
	}
	return c
}

func (o op) String() string { return o.describe(o.c) }

// describe names o with its Case bound to a communicator (c).
func (o op) describe(c harness.Case) string {
	s := fmt.Sprintf("%s on %s stream %d", c, commNames[o.comm], o.stream)
	if o.align > 0 {
		s += fmt.Sprintf(" offset %d", o.align)
	}
	return s + fmt.Sprintf(" seed %#x", o.c.Seed)
}

// batch is the operations run between two synchronisations: launched one
// by one, or all in one group.
type batch struct {
	ops   []op
	group bool
}

// sequence is what every rank runs for one seed.
type sequence struct {
	streams     int             // streams of each rank, shared by its communicators
	commStreams [numComms][]int // the rank's streams each communicator uses
	batches     []batch
}

// draw returns the sequence of nops operations for seed on nranks ranks,
// counts up to maxCount elements, each rank with at most maxStreams
// streams (0: no limit) and each communicator with at most -random.streams
// of them. The limits change only the streams, not the operations.
func draw(seed uint64, nops, nranks, maxCount, maxStreams int) sequence {
	rng := rand.New(rand.NewPCG(seed, 0x7a4d0))
	var s sequence
	s.streams, s.commStreams = drawStreams(rng, *streams, maxStreams)
	for drawn := 0; drawn < nops; {
		b := batch{group: rng.IntN(4) == 0}
		k := 1 + rng.IntN(6)
		if b.group {
			k = 2 + rng.IntN(4)
		}
		k = min(k, nops-drawn)
		for range k {
			b.ops = append(b.ops, drawOp(rng, nranks, maxCount))
		}
		for i := range b.ops {
			o := &b.ops[i]
			cs := s.commStreams[o.comm]
			o.stream = cs[o.stream%len(cs)]
		}
		s.batches = append(s.batches, b)
		drawn += k
	}
	return s
}

// perRank are the kinds whose Count is one rank's share (or one block):
// their buffers are nranks times larger.
var perRank = map[string]bool{"allgather": true, "reducescatter": true, "alltoall": true,
	"alltoallv": true, "scatter": true, "gather": true}

func drawOp(rng *rand.Rand, nranks, maxCount int) op {
	var kind string
	if rng.IntN(100) < 55 {
		kind = harness.Kinds[rng.IntN(len(harness.Kinds))]
	} else {
		kind = harness.P2PKinds[rng.IntN(len(harness.P2PKinds))]
	}
	types := gccl.DataTypes()
	o := op{
		c:      harness.Case{Kind: kind, T: types[rng.IntN(len(types))], Seed: rng.Uint64()},
		comm:   rng.IntN(numComms),
		stream: rng.IntN(6),
		root:   rng.IntN(1 << 20),
		peer:   rng.IntN(1 << 20),
	}
	if rng.IntN(10) < 3 {
		o.align = 1 + rng.IntN(3)
	}
	o.c.Count = drawCount(rng, o.c.T.Size(), maxCount)
	if perRank[kind] && o.c.Count > 1024 {
		o.c.Count /= nranks // keep every buffer within about maxCount elements
	}
	if harness.Reduces(kind) {
		drawRedOp(rng, &o)
	}
	o.c.InPlace = !harness.IsP2P(kind) && rng.IntN(2) == 0
	return o
}

// drawRedOp picks a built-in operator or a PreMulSum with a scalar every
// type holds exactly (a whole number for integers). Every rank passes the
// same scalar: gccl computes PreMulSum as (Σx)·s (issue 16), which equals
// NCCL's Σ s·x only then.
func drawRedOp(rng *rand.Rand, o *op) {
	ops := gccl.RedOps()
	i := rng.IntN(len(ops) + 1)
	if i < len(ops) {
		o.c.Op = ops[i]
		return
	}
	o.c.Op = harness.PreMulSum
	o.deviceScale = rng.IntN(2) == 0
	if o.c.T.IsFloat() {
		o.c.Scalar = []float64{0.5, 1.5, 2}[rng.IntN(3)]
	} else {
		o.c.Scalar = []float64{2, 3, 5}[rng.IntN(3)]
	}
}

// drawCount picks an element count up to maxCount, biased to what breaks
// code: 0, 1, 7, small odd sizes, sizes around the 128 KiB and 1 MiB
// thresholds (of bytes, for elements of size bytes), and about 5% large.
func drawCount(rng *rand.Rand, size, maxCount int) int {
	near := func(bytes int) int { return max(bytes/size+rng.IntN(9)-4, 0) }
	var n int
	switch r := rng.IntN(100); {
	case r < 6:
		n = 0
	case r < 14:
		n = 1
	case r < 18:
		n = 7
	case r < 30:
		n = 1 + 2*rng.IntN(16) // small and odd
	case r < 60:
		n = 2 + rng.IntN(1023)
	case r < 77:
		n = 1024 + rng.IntN(63*1024)
	case r < 87:
		n = near(128 << 10)
	case r < 95:
		n = near(1 << 20)
	default:
		n = maxCount/4 + rng.IntN(maxCount*3/4+1)
	}
	return min(n, maxCount)
}
