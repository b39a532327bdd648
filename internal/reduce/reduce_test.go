package reduce

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allOps is every built-in operator and one pre-multiplied sum.
var allOps = append(gccl.RedOps(), gccl.NumBuiltinOps)

// randomBits fills b with random bit patterns: every encoding, specials
// included, for the small float types; values of mixed magnitude (and a
// few specials) for float32 and float64, whose random patterns would be
// mostly huge or tiny.
func randomBits(rng *rand.Rand, t gccl.DataType, b []byte) {
	for i := range len(b) / t.Size() {
		switch t {
		case gccl.Float32:
			v := float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
			if rng.IntN(50) == 0 {
				v = []float32{float32(math.Inf(1)), float32(math.NaN()), 0, -0x1p-140}[rng.IntN(4)]
			}
			storeBits(b, i, 4, uint64(math.Float32bits(v)))
		case gccl.Float64:
			v := rng.NormFloat64() * math.Exp2(float64(rng.IntN(200)-100))
			storeBits(b, i, 8, math.Float64bits(v))
		default:
			storeBits(b, i, t.Size(), rng.Uint64())
		}
	}
}

// expect is the straightforward per-element oracle: integers in 64-bit
// arithmetic truncated to the type, floats in float64 rounded once.
func expect(t gccl.DataType, op gccl.RedOp, a, b []byte, i int) uint64 {
	size := t.Size()
	x, y := loadBits(a, i, size), loadBits(b, i, size)
	if !t.IsFloat() {
		bits := uint(8 * size)
		sx, sy := int64(x<<(64-bits))>>(64-bits), int64(y<<(64-bits))>>(64-bits) // sign-extended
		signed := t == gccl.Int8 || t == gccl.Int32 || t == gccl.Int64
		less := x < y
		if signed {
			less = sx < sy
		}
		switch op {
		case gccl.Prod:
			return x * y
		case gccl.Max:
			if less {
				return y
			}
			return x
		case gccl.Min:
			if less {
				return x
			}
			return y
		}
		return x + y
	}
	fx, fy := loadFloat(t, a, i), loadFloat(t, b, i)
	var r float64
	switch op {
	case gccl.Prod:
		r = fx * fy
	case gccl.Max:
		r = math.Max(fx, fy)
		if math.IsNaN(fx) != math.IsNaN(fy) {
			r = map[bool]float64{true: fy, false: fx}[math.IsNaN(fx)]
		}
	case gccl.Min:
		r = math.Min(fx, fy)
		if math.IsNaN(fx) != math.IsNaN(fy) {
			r = map[bool]float64{true: fy, false: fx}[math.IsNaN(fx)]
		}
	default:
		r = fx + fy
	}
	out := make([]byte, size)
	storeFloat(t, out, 0, r)
	return loadBits(out, 0, size)
}

func sameElement(t gccl.DataType, got, want []byte, i int) bool {
	g, w := loadBits(got, i, t.Size()), loadBits(want, i, t.Size())
	if g == w {
		return true
	}
	if t.IsFloat() {
		return math.IsNaN(loadFloat(t, got, i)) && math.IsNaN(loadFloat(t, want, i))
	}
	return false
}

func TestIntoEveryTypeAndOp(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, dt := range gccl.DataTypes() {
		for _, op := range allOps {
			// Sizes cover the unrolled loop's tail and several staging blocks;
			// offsets make unaligned buffers.
			for _, n := range []int{1, 3, 4, 7, blockElems + 5} {
				for _, off := range []int{0, 1} {
					size := dt.Size()
					a := make([]byte, n*size+off)[off:]
					b := make([]byte, n*size+1)[1:]
					randomBits(rng, dt, a)
					randomBits(rng, dt, b)
					want := make([]byte, len(a))
					for i := range n {
						storeBits(want, i, size, expect(dt, op, a, b, i))
					}
					// Into3 into a poisoned separate buffer.
					d := make([]byte, len(a))
					randomBits(rng, dt, d)
					require.NoError(t, Into3(d, a, b, dt, op))
					// Into in place.
					require.NoError(t, Into(a, b, dt, op))
					for i := range n {
						if !sameElement(dt, d, want, i) || !sameElement(dt, a, want, i) {
							t.Fatalf("%v %v n=%d off=%d element %d: Into3 %#x, Into %#x, want %#x", dt, op, n, off, i,
								loadBits(d, i, size), loadBits(a, i, size), loadBits(want, i, size))
						}
					}
				}
			}
		}
	}
}

func TestInto3AliasingSecondOperand(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	a, b := make([]byte, 4*1000), make([]byte, 4*1000)
	randomBits(rng, gccl.Float32, a)
	randomBits(rng, gccl.Float32, b)
	want := make([]byte, len(a))
	require.NoError(t, Into3(want, a, b, gccl.Float32, gccl.Sum))
	require.NoError(t, Into3(b, a, b, gccl.Float32, gccl.Sum))
	for i := range 1000 {
		require.True(t, sameElement(gccl.Float32, b, want, i), "element %d", i)
	}
}

func TestIntoBadArguments(t *testing.T) {
	b8 := make([]byte, 8)
	cases := []struct {
		err  error
		arg  string
		name string
	}{
		{Into(b8, b8, gccl.DataType(99), gccl.Sum), "datatype", "unknown type"},
		{Into(b8, b8, gccl.DataType(-1), gccl.Sum), "datatype", "negative type"},
		{Into(b8, b8, gccl.Float32, gccl.RedOp(-1)), "op", "negative op"},
		{Into(b8, b8[:4], gccl.Float32, gccl.Sum), "src", "short source"},
		{Into3(b8, b8, b8[:7], gccl.Int8, gccl.Sum), "src", "short second source"},
		{Into(b8[:6], b8[:6], gccl.Float32, gccl.Sum), "dst", "partial element"},
	}
	for _, c := range cases {
		require.ErrorIs(t, c.err, gccl.ErrInvalidArgument, c.name)
		assert.Equal(t, c.arg, c.err.(*gccl.Error).Arg, c.name)
	}
	assert.NoError(t, Into(nil, nil, gccl.Float64, gccl.Max))
}
