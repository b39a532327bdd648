package coll_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/stretchr/testify/require"
)

// broadcast launches a Broadcast of count elements of dt from root and
// registers its check: every rank's recvbuff equals root's input.
func broadcast(t *testing.T, w *colltest.World, ck *checker, dt gccl.DataType, count, root int, inPlace bool, rng *rand.Rand) {
	n, cb := w.N(), count*dt.Size()
	recvs := make([][]byte, n)
	var input []byte
	for r := range n {
		var sp uintptr
		var sb []byte
		if r == root || inPlace {
			sp, sb, _ = filled(t, w, r, cb, dt, rng)
		}
		if r == root {
			input = append([]byte(nil), sb...)
		}
		rp, rb := sp, sb
		if !inPlace {
			rp, rb = w.Alloc(t, r, cb, rng)
		}
		recvs[r] = rb
		require.NoError(t, coll.Broadcast(w.Comms[r], sp, rp, count, dt, root, w.Streams[r]))
	}
	ck.add(func() error {
		for r := range n {
			if err := same(fmt.Sprintf("broadcast %v count=%d root=%d inplace=%v rank %d", dt, count, root, inPlace, r), recvs[r], input); err != nil {
				return err
			}
		}
		return nil
	})
}

// allGather launches an AllGather of count elements per rank and registers
// its check: block i of every rank's recvbuff is rank i's input.
func allGather(t *testing.T, w *colltest.World, ck *checker, dt gccl.DataType, count int, inPlace bool, rng *rand.Rand) {
	n, cb := w.N(), count*dt.Size()
	recvs, inputs := make([][]byte, n), make([][]byte, n)
	for r := range n {
		var sp, rp uintptr
		var rb []byte
		if inPlace {
			rp, rb = w.Alloc(t, r, n*cb, rng)
			sp = rp + uintptr(r*cb)
			inputs[r] = append([]byte(nil), rb[r*cb:(r+1)*cb]...)
		} else {
			sp, _, inputs[r] = filled(t, w, r, cb, dt, rng)
			rp, rb = w.Alloc(t, r, n*cb, rng)
		}
		recvs[r] = rb
		require.NoError(t, coll.AllGather(w.Comms[r], sp, rp, count, dt, w.Streams[r]))
	}
	ck.add(func() error {
		for r := range n {
			for i := range n {
				what := fmt.Sprintf("allgather %v count=%d inplace=%v rank %d block %d", dt, count, inPlace, r, i)
				if err := same(what, recvs[r][i*cb:(i+1)*cb], inputs[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// copyMatrix runs Broadcast (every root) and AllGather for every type, in
// place or not, over smallCounts.
func copyMatrix(t *testing.T, w *colltest.World, counts []int, rng *rand.Rand) {
	var ck checker
	for _, dt := range gccl.DataTypes() {
		for ci, count := range counts {
			for _, inPlace := range []bool{false, true} {
				for root := range w.N() {
					broadcast(t, w, &ck, dt, count, (root+ci)%w.N(), inPlace, rng)
				}
				allGather(t, w, &ck, dt, count, inPlace, rng)
			}
		}
		ck.run(t, w)
	}
}

func TestCopyMatrix(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		t.Run(fmt.Sprint("nranks=", n), func(t *testing.T) {
			counts := smallCounts(n)
			if n == 8 {
				counts = []int{1, 7, 1031}
			}
			copyMatrix(t, colltest.New(t, n, nil), counts, rand.New(rand.NewPCG(uint64(n), 3)))
		})
	}
}

// TestCopyLarge: 1000003 elements, several pipeline chunks and an odd tail.
func TestCopyLarge(t *testing.T) {
	w := colltest.New(t, 4, nil)
	rng := rand.New(rand.NewPCG(4, 4))
	var ck checker
	broadcast(t, w, &ck, gccl.Float32, 1000003, 2, false, rng)
	broadcast(t, w, &ck, gccl.Uint8, 1000003, 1, true, rng)
	allGather(t, w, &ck, gccl.BFloat16, 1000003, false, rng)
	allGather(t, w, &ck, gccl.Int8, 1000003, true, rng)
	ck.run(t, w)
}
