package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTournament: in every round each rank has at most one partner, the
// pairing is symmetric, and every pair of ranks meets exactly once.
func TestTournament(t *testing.T) {
	for n := 1; n <= 9; n++ {
		met := map[[2]int]int{}
		for k := range tournamentRounds(n) {
			for r := range n {
				p := partner(r, k, n)
				if p < 0 {
					continue
				}
				require.NotEqual(t, r, p, "n=%d round %d", n, k)
				require.Equal(t, r, partner(p, k, n), "n=%d round %d: %d→%d not symmetric", n, k, r, p)
				if r < p {
					met[[2]int{r, p}]++
				}
			}
		}
		for a := range n {
			for b := a + 1; b < n; b++ {
				assert.Equal(t, 1, met[[2]int{a, b}], "n=%d pair %d,%d", n, a, b)
			}
		}
	}
}

// TestWalkPieces pairs random piece lists as byte streams and checks every
// byte lands where a flat copy would put it, with no run crossing limit.
func TestWalkPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		total := 1 + rng.IntN(300)
		split := func(base uintptr) []p2pPiece {
			var ps []p2pPiece
			for off := 0; off < total; {
				k := min(total-off, 1+rng.IntN(60))
				ps = append(ps, p2pPiece{base + uintptr(off), k})
				off += k
			}
			return ps
		}
		src, dst := split(1000), split(100000)
		limit := 1 + rng.IntN(80)
		seen := make([]bool, total)
		pos := 0
		err := walkPieces(dst, src, limit, func(d, s uintptr, k int) error {
			require.Equal(t, int(s-1000), int(d-100000), "trial %d", trial)
			require.Equal(t, pos, int(s-1000))
			require.LessOrEqual(t, pos%limit+k, limit, "run crosses the limit")
			for i := range k {
				seen[pos+i] = true
			}
			pos += k
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, total, pos)
		assert.NotContains(t, seen, false)
		off, k := rng.IntN(total), 0
		k = rng.IntN(total - off + 1)
		w := window(src, off, k)
		assert.Equal(t, k, total0(w))
		if k > 0 {
			assert.Equal(t, uintptr(1000+off), w[0].ptr)
		}
	}
}

func total0(ps []p2pPiece) int { return total(ps) }
