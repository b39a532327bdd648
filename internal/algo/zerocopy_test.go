package algo

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSlicesAndBlocksCover checks that slices and their blocks tile the
// buffer exactly, in order, with aligned interior boundaries.
func TestSlicesAndBlocksCover(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		n, es := 1+rng.IntN(16), []int{1, 2, 4, 8}[rng.IntN(4)]
		count := rng.IntN(200000)
		block := es * (1 + rng.IntN(5000))
		next := 0
		for r, s := range Slices(count, n, es) {
			require.Equal(t, next, s.Off, "slice %d of %d (count %d)", r, n, count)
			if s.Off+s.Len < count {
				require.Zero(t, (s.Off+s.Len)*es%AlignBytes, "slice %d end unaligned", r)
			}
			inner := s.Off
			for _, b := range Blocks(s, es, block) {
				require.Equal(t, inner, b.Off)
				require.Positive(t, b.Len)
				require.LessOrEqual(t, b.Len*es, max(block, es))
				inner += b.Len
			}
			require.Equal(t, s.Off+s.Len, inner)
			next += s.Len
		}
		require.Equal(t, count, next)
	}
}
