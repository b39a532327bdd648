package reduce

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collective reduces inputs the way an engine does, in the given order of
// ranks, then finishes Avg and PreMulSum with Scale.
func collective(t *testing.T, inputs [][]byte, order []int, dt gccl.DataType, op gccl.RedOp, scalar float64) []byte {
	acc := append([]byte(nil), inputs[order[0]]...)
	for _, r := range order[1:] {
		require.NoError(t, Into(acc, inputs[r], dt, op))
	}
	switch {
	case op == gccl.Avg:
		require.NoError(t, Scale(acc, dt, 1, len(inputs)))
	case op >= gccl.NumBuiltinOps:
		require.NoError(t, Scale(acc, dt, scalar, 1))
	}
	return acc
}

func TestReferenceMatchesReductionForEveryTypeAndOp(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, dt := range gccl.DataTypes() {
		for _, op := range allOps {
			for _, nranks := range []int{1, 2, 3, 8} {
				n := 257
				inputs := make([][]byte, nranks)
				for r := range inputs {
					inputs[r] = make([]byte, n*dt.Size())
					Fill(inputs[r], dt, rng)
				}
				scalar := float64(1 + rng.IntN(3))
				want := Reference(inputs, dt, op, scalar)
				got := collective(t, inputs, rng.Perm(nranks), dt, op, scalar)
				require.NoError(t, Check(got, want, dt, nranks), "%v %v nranks=%d", dt, op, nranks)

				// A wrong element must be caught and named.
				bad := rng.IntN(n)
				if dt.IsFloat() {
					storeFloat(dt, got, bad, 4*loadFloat(dt, want, bad)+0.5)
				} else {
					storeBits(got, bad, dt.Size(), loadBits(got, bad, dt.Size())^1<<rng.IntN(8*dt.Size()))
				}
				err := Check(got, want, dt, nranks)
				require.Error(t, err, "%v %v nranks=%d", dt, op, nranks)
				assert.Contains(t, err.Error(), "element "+itoa(bad)+" ")
			}
		}
	}
}

func itoa(i int) string { return formatInt(gccl.Int64, uint64(i)) }

func TestReferenceExactValues(t *testing.T) {
	i8 := func(v ...int8) []byte {
		b := make([]byte, len(v))
		for i, x := range v {
			b[i] = byte(x)
		}
		return b
	}
	in := [][]byte{i8(100, -7, 3, -128), i8(100, 0, -5, -1)}
	assert.Equal(t, i8(-56, -7, -2, 127), Reference(in, gccl.Int8, gccl.Sum, 0), "sum wraps")
	assert.Equal(t, i8(-28, -3, -1, 63), Reference(in, gccl.Int8, gccl.Avg, 0), "avg of the wrapped sum, truncated")
	assert.Equal(t, i8(16, 0, -15, -128), Reference(in, gccl.Int8, gccl.Prod, 0), "prod wraps")
	assert.Equal(t, i8(100, 0, 3, -1), Reference(in, gccl.Int8, gccl.Max, 0))
	assert.Equal(t, i8(100, -7, -5, -128), Reference(in, gccl.Int8, gccl.Min, 0))
	assert.Equal(t, i8(-112, -14, -4, -2), Reference(in, gccl.Int8, gccl.NumBuiltinOps, 2), "2*x summed, wrapped")

	f := func(v ...float64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			storeFloat(gccl.Float64, b, i, x)
		}
		return b
	}
	fin := [][]byte{f(1, 2.5), f(3, -0.5), f(0.25, 4)}
	assert.Equal(t, f(4.25, 6), Reference(fin, gccl.Float64, gccl.Sum, 0))
	assert.Equal(t, f(4.25/3, 2), Reference(fin, gccl.Float64, gccl.Avg, 0))
	assert.Equal(t, f(0.75, -5), Reference(fin, gccl.Float64, gccl.Prod, 0))
	assert.Equal(t, f(8.5, 12), Reference(fin, gccl.Float64, gccl.NumBuiltinOps+3, 2))
}

func TestReferenceAndCheckBadArguments(t *testing.T) {
	assert.Nil(t, Reference(nil, gccl.Float32, gccl.Sum, 0))
	assert.Nil(t, Reference([][]byte{make([]byte, 4), make([]byte, 8)}, gccl.Float32, gccl.Sum, 0))
	assert.Nil(t, Reference([][]byte{make([]byte, 3)}, gccl.Float32, gccl.Sum, 0))
	assert.Nil(t, Reference([][]byte{make([]byte, 4)}, gccl.DataType(40), gccl.Sum, 0))
	assert.Nil(t, Reference([][]byte{make([]byte, 4)}, gccl.Float32, gccl.RedOp(-2), 0))
	assert.ErrorIs(t, Check(make([]byte, 4), nil, gccl.Float32, 2), gccl.ErrInvalidArgument)
	assert.ErrorIs(t, Check(nil, nil, gccl.DataType(40), 2), gccl.ErrInvalidArgument)
	assert.NoError(t, Check(nil, nil, gccl.Float32, 2))
}

func TestFillIsSafeForEveryOp(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, dt := range gccl.DataTypes() {
		buf := make([]byte, 4096*dt.Size())
		Fill(buf, dt, rng)
		seen := map[uint64]bool{}
		for i := range 4096 {
			seen[loadBits(buf, i, dt.Size())] = true
			if dt.IsFloat() {
				v := loadFloat(dt, buf, i)
				require.True(t, v >= 0.75 && v <= 1.5, "%v element %d = %v", dt, i, v)
			} else {
				require.Equal(t, uint64(1), loadBits(buf, i, dt.Size())&1, "%v element %d is even", dt, i)
			}
		}
		assert.Greater(t, len(seen), 3, "%v: values must vary", dt)
	}
}
