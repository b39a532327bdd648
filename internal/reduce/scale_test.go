package reduce

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScaleIntegersTruncateAsNCCL(t *testing.T) {
	cases := []struct {
		t    gccl.DataType
		in   []int64
		mul  float64
		div  int
		want []int64
	}{
		{gccl.Int8, []int64{-7, 7, -128, 127, 1}, 1, 2, []int64{-3, 3, -64, 63, 0}},
		{gccl.Int8, []int64{-128, 127, -100}, 1, 128, []int64{-1, 0, 0}}, // 128 does not fit int8
		{gccl.Int8, []int64{-128, 127}, 1, 200, []int64{0, 0}},
		{gccl.Uint8, []int64{255, 10}, 1, 300, []int64{0, 0}},
		{gccl.Uint8, []int64{255, 10}, 1, 4, []int64{63, 2}},
		{gccl.Int8, []int64{100, -3}, 3, 1, []int64{44, -9}}, // 300 wraps to 44
		{gccl.Int32, []int64{-1000001, 999}, -2, 3, []int64{666667, -666}},
		{gccl.Uint32, []int64{5}, -1, 1, []int64{math.MaxUint32 - 4}},
		{gccl.Int64, []int64{math.MinInt64, -9}, 1, 8, []int64{math.MinInt64 / 8, -1}},
		{gccl.Uint64, []int64{-1}, 1, 2, []int64{math.MaxInt64}}, // 2^64-1 / 2
	}
	for _, c := range cases {
		size := c.t.Size()
		for _, off := range []int{0, 1} {
			buf := make([]byte, len(c.in)*size+off)[off:]
			for i, v := range c.in {
				storeBits(buf, i, size, uint64(v))
			}
			require.NoError(t, Scale(buf, c.t, c.mul, c.div))
			for i, v := range c.want {
				assert.Equal(t, formatInt(c.t, uint64(v)), formatInt(c.t, loadBits(buf, i, size)),
					"%v %d*%v/%d", c.t, c.in[i], c.mul, c.div)
			}
		}
	}
}

func TestScaleFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, dt := range gccl.DataTypes() {
		if !dt.IsFloat() {
			continue
		}
		for _, off := range []int{0, 1} {
			n := blockElems + 3
			buf := make([]byte, n*dt.Size()+off)[off:]
			Fill(buf, dt, rng)
			orig := append([]byte(nil), buf...)
			mul, div := 0.5+rng.Float64(), 1+rng.IntN(8)
			require.NoError(t, Scale(buf, dt, mul, div))
			want := make([]byte, len(buf))
			for i := range n {
				storeFloat(dt, want, i, loadFloat(dt, orig, i)*mul/float64(div))
				require.Equal(t, loadBits(want, i, dt.Size()), loadBits(buf, i, dt.Size()),
					"%v element %d: %v*%v/%d", dt, i, loadFloat(dt, orig, i), mul, div)
			}
		}
	}
}

func TestScaleBadArguments(t *testing.T) {
	b := make([]byte, 8)
	for _, c := range []struct {
		err error
		arg string
	}{
		{Scale(b, gccl.Int32, 1, 0), "div"},
		{Scale(b, gccl.Int32, 1, -4), "div"},
		{Scale(b, gccl.Int32, 1.5, 1), "mul"},
		{Scale(b, gccl.Int64, 1e19, 1), "mul"},
		{Scale(b, gccl.Float32, math.NaN(), 1), "mul"},
		{Scale(b, gccl.DataType(12), 1, 1), "datatype"},
		{Scale(b[:3], gccl.Float16, 1, 2), "dst"},
	} {
		require.ErrorIs(t, c.err, gccl.ErrInvalidArgument)
		assert.Equal(t, c.arg, c.err.(*gccl.Error).Arg)
	}
	assert.NoError(t, Scale(b, gccl.Float32, 1.5, 1))
}
