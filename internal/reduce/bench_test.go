package reduce

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
)

// BenchmarkInto reports throughput as bytes of dst reduced per second (the
// memory traffic is three times that: two loads and a store).
func BenchmarkInto(b *testing.B) {
	cases := []struct {
		t  gccl.DataType
		op gccl.RedOp
	}{
		{gccl.Float32, gccl.Sum}, {gccl.Float32, gccl.Max}, {gccl.Float64, gccl.Prod},
		{gccl.Int32, gccl.Sum}, {gccl.Int8, gccl.Min}, {gccl.Float16, gccl.Sum},
		{gccl.BFloat16, gccl.Sum}, {gccl.Float8E4M3, gccl.Sum},
	}
	rng := rand.New(rand.NewPCG(71, 72))
	for _, size := range []int{256 << 10, 32 << 20} {
		for _, c := range cases {
			if size > 256<<10 && c.t != gccl.Float32 {
				continue
			}
			dst, src := make([]byte, size), make([]byte, size)
			Fill(dst, c.t, rng)
			Fill(src, c.t, rng)
			b.Run(fmt.Sprintf("%v/%v/%dKiB", c.t, c.op, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					if err := Into(dst, src, c.t, c.op); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
