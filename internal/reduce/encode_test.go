package reduce

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
)

func TestEncode(t *testing.T) {
	for _, c := range []struct {
		t    gccl.DataType
		v    float64
		want []byte
	}{
		{gccl.Int8, -2, []byte{0xfe}},
		{gccl.Uint32, 3, []byte{3, 0, 0, 0}},
		{gccl.Int64, -1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{gccl.Float16, 1.5, []byte{0x00, 0x3e}},
		{gccl.BFloat16, 1.5, []byte{0xc0, 0x3f}},
		{gccl.Float32, 1.5, []byte{0, 0, 0xc0, 0x3f}},
		{gccl.Float64, -2, []byte{0, 0, 0, 0, 0, 0, 0, 0xc0}},
		{gccl.Float8E4M3, 1.5, []byte{0x3c}},
		{gccl.Float8E5M2, 1.5, []byte{0x3e}},
	} {
		assert.Equal(t, c.want, Encode(c.t, c.v), "%v %v", c.t, c.v)
	}
}
