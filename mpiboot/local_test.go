package mpiboot

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestLocalMatchesTransports: mpiboot's local ranks group processes by the
// host hash the transports use, so GCCL_HOSTID splits them the same way
// (test/run.sh runs this with two host IDs on one machine).
func TestLocalMatchesTransports(t *testing.T) {
	all, err := Allgather(binary.LittleEndian.AppendUint64(nil, topo.HostHash()))
	require.NoError(t, err)
	rank, size := World()
	hashes := make([]uint64, size)
	for r := range hashes {
		hashes[r] = binary.LittleEndian.Uint64(all[8*r:])
	}
	lr, ls := localOf(hashes, rank)
	assert.Equal(t, lr, LocalRank(), "local rank")
	assert.Equal(t, ls, LocalSize(), "local size")
	t.Logf("GCCL_HOSTID=%q: local rank %d of %d", os.Getenv("GCCL_HOSTID"), LocalRank(), LocalSize())
}
