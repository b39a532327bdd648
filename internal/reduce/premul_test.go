package reduce

import (
	"math"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// elem is one element of t holding v (integers: v's low bits).
func elem(t gccl.DataType, v float64) []byte {
	b := make([]byte, t.Size())
	if t.IsFloat() {
		storeFloat(t, b, 0, v)
	} else {
		storeBits(b, 0, t.Size(), uint64(int64(v)))
	}
	return b
}

// TestPreMulSumReferencePerRank: NCCL's Σ_r s_r·x_r, each rank's input
// times its own scalar. With 4 ranks, inputs r+1 and scalars r+2 it is
// 2+6+12+20 = 40 for every type.
func TestPreMulSumReferencePerRank(t *testing.T) {
	for _, dt := range gccl.DataTypes() {
		inputs, scalars := make([][]byte, 4), make([][]byte, 4)
		for r := range inputs {
			inputs[r] = append(elem(dt, float64(r+1)), elem(dt, float64(r+1))...)
			scalars[r] = elem(dt, float64(r+2))
		}
		got := PreMulSumReference(inputs, dt, scalars)
		require.NoError(t, Check(got, append(elem(dt, 40), elem(dt, 40)...), dt, 4), "%v", dt)
	}
}

// TestPreMulSum64BitScalarsExact: 64-bit integer scalars multiply in the
// type modulo 2^64, with no float64 in between: a uint64 scalar from 2^63
// and an int64 scalar beyond 2^53.
func TestPreMulSum64BitScalarsExact(t *testing.T) {
	u := func(v uint64) []byte {
		b := make([]byte, 8)
		storeBits(b, 0, 8, v)
		return b
	}
	big := uint64(1<<63 + 3)
	buf := u(5)
	require.NoError(t, MulScalar(buf, gccl.Uint64, u(big)))
	assert.Equal(t, uint64(1<<63+15), loadBits(buf, 0, 8)) // 5·(2^63+3) modulo 2^64
	odd := int64(1<<53 + 1)
	buf = u(uint64(3))
	require.NoError(t, MulScalar(buf, gccl.Int64, u(uint64(odd))))
	assert.Equal(t, 3*odd, int64(loadBits(buf, 0, 8)))
	buf = u(math.MaxUint64)
	require.NoError(t, MulScalar(buf, gccl.Int64, u(uint64(odd))))
	assert.Equal(t, -odd, int64(loadBits(buf, 0, 8)))

	in := [][]byte{u(1), u(2)}
	got := PreMulSumReference(in, gccl.Uint64, [][]byte{u(big), u(big)})
	assert.Equal(t, uint64(1<<63+9), loadBits(got, 0, 8)) // 3·(2^63+3) modulo 2^64
}

func TestMulScalarTypes(t *testing.T) {
	for _, dt := range gccl.DataTypes() {
		for _, off := range []int{0, 1} {
			buf := make([]byte, 3*dt.Size()+off)[off:]
			for i := range 3 {
				copy(buf[i*dt.Size():], elem(dt, float64(i+1)))
			}
			require.NoError(t, MulScalar(buf, dt, elem(dt, 3)))
			for i := range 3 {
				require.NoError(t, Check(buf[i*dt.Size():(i+1)*dt.Size()], elem(dt, float64(3*(i+1))), dt, 1), "%v", dt)
			}
		}
	}
	assert.Error(t, MulScalar(make([]byte, 8), gccl.Int64, make([]byte, 4)))
}
