package coll_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// allOps lists the operators every reducing test covers; premulSum stands
// for an operator made by coll.CreatePreMulSum.
const premulSum = gccl.NumBuiltinOps

var allOps = []gccl.RedOp{gccl.Sum, gccl.Prod, gccl.Max, gccl.Min, gccl.Avg, premulSum}

// withEnv sets the variable for the communicators the test creates and
// reloads the settings, restoring both afterwards.
func withEnv(t *testing.T, name, value string) *env.Settings {
	t.Cleanup(func() { env.Reload() }) // runs after Setenv's cleanup has restored the variable
	t.Setenv(name, value)
	return env.Reload()
}

// smallCounts are the element counts every collective is tested with for
// nranks ranks: empty, one element, fewer elements than ranks, and sizes
// that are not multiples of the rank count or of the alignment.
func smallCounts(n int) []int { return []int{0, 1, n - 1, 1031} }

// scalarFor is rank r's PreMulSum scalar for t, one element: a different
// one on every rank (NCCL's Σ_r s_r·x_r), values every float type holds
// closely, and for the 64-bit integers values no float64 holds (a uint64
// from 2^63, an int64 beyond -2^53), which must multiply exactly.
func scalarFor(t gccl.DataType, r int) []byte {
	switch t {
	case gccl.Uint64:
		return binary.LittleEndian.AppendUint64(nil, 1<<63+3+2*uint64(r))
	case gccl.Int64:
		return binary.LittleEndian.AppendUint64(nil, uint64(-(1<<53 + 1 + 2*int64(r))))
	}
	if t.IsFloat() {
		return reduce.Encode(t, 1.5+0.25*float64(r))
	}
	return reduce.Encode(t, float64(3+r))
}

// redOps resolves op on every rank: built-ins as they are, premulSum as a
// fresh operator made with scalarFor(t, r) on rank r (the scalar in host
// memory, or in device memory when onDevice), which it also returns. The
// operators are destroyed when the test ends.
func redOps(t *testing.T, w *colltest.World, op gccl.RedOp, dt gccl.DataType, onDevice bool, rng *rand.Rand) ([]gccl.RedOp, [][]byte) {
	ops := make([]gccl.RedOp, w.N())
	if op != premulSum {
		for r := range ops {
			ops[r] = op
		}
		return ops, nil
	}
	scalars := make([][]byte, w.N())
	res := coll.ScalarHostImmediate
	if onDevice {
		res = coll.ScalarDevice
	}
	for r, c := range w.Comms {
		p, b := w.Alloc(t, r, dt.Size(), rng)
		scalars[r] = scalarFor(dt, r)
		copy(b, scalars[r])
		var err error
		ops[r], err = coll.CreatePreMulSum(c, p, dt, res)
		require.NoError(t, err)
		t.Cleanup(func() { _ = coll.DestroyRedOp(c, ops[r]) })
	}
	return ops, scalars
}

// tileElems is the period of the values filled writes: large buffers
// repeat their first tileElems random elements (an odd period, so blocks and
// chunks never line up with it), which keeps filling and computing the
// reference cheap under the race detector; every element is still checked.
const tileElems = 65521

// filled allocates n bytes on rank r with random values of type dt
// (reduce.Fill) and returns the pointer, the view and a copy of the values.
func filled(t *testing.T, w *colltest.World, r, n int, dt gccl.DataType, rng *rand.Rand) (uintptr, []byte, []byte) {
	p, b := w.Alloc(t, r, n, rng)
	head := b[:min(len(b), tileElems*dt.Size())]
	reduce.Fill(head, dt, rng)
	tile(b, len(head))
	return p, b, append([]byte(nil), b...)
}

// tile repeats b's first n bytes over the rest of b.
func tile(b []byte, n int) {
	for off := n; off < len(b); off += copy(b[off:], b[:n]) {
	}
}

// reference is reduce.Reference (PreMulSumReference with every rank's
// scalar for premulSum) over inputs made by filled: computed on one period
// and tiled.
func reference(inputs [][]byte, dt gccl.DataType, op gccl.RedOp, scalars [][]byte) []byte {
	ref := func(in [][]byte) []byte {
		if op == premulSum {
			return reduce.PreMulSumReference(in, dt, scalars)
		}
		return reduce.Reference(in, dt, op, 0)
	}
	period := tileElems * dt.Size()
	if len(inputs[0]) <= period {
		return ref(inputs)
	}
	heads := make([][]byte, len(inputs))
	for r, in := range inputs {
		heads[r] = in[:period]
	}
	want := make([]byte, len(inputs[0]))
	copy(want, ref(heads))
	tile(want, period)
	return want
}

// checker collects the checks of the cases issued since the last Sync.
type checker struct {
	checks []func() error
}

func (c *checker) add(f func() error) { c.checks = append(c.checks, f) }

// run syncs every stream, runs every check and resets the arena.
func (c *checker) run(t *testing.T, w *colltest.World) {
	t.Helper()
	w.Sync(t)
	for _, f := range c.checks {
		require.NoError(t, f())
	}
	c.checks = c.checks[:0]
	w.Reset()
}

// same fails unless got equals want byte for byte (bytes.Equal first: a
// byte loop over megabytes is slow under -race).
func same(what string, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s: byte %d of %d: got %#x, want %#x", what, i, len(want), got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d bytes, want %d", what, len(got), len(want))
	}
	return nil
}
