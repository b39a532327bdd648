package mpiboot

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLocalOfRandomHosts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(40)
		hosts := 1 + rng.IntN(6)
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = 1000 + uint64(rng.IntN(hosts))
		}
		// Local ranks on each host must be 0..k-1 in rank order, sizes k.
		next := map[uint64]int{}
		for r := range hashes {
			lr, ls := localOf(hashes, r)
			assert.Equal(t, next[hashes[r]], lr, "rank %d of %v", r, hashes)
			next[hashes[r]]++
			count := 0
			for _, h := range hashes {
				if h == hashes[r] {
					count++
				}
			}
			assert.Equal(t, count, ls)
		}
	}
}

func TestHostHashStable(t *testing.T) {
	a, b := hostHash(), hostHash()
	assert.Equal(t, a, b)
	assert.NotZero(t, a)
}
