package mpiboot

import (
	"encoding/binary"
	"time"

	"github.com/gccl/gccl/transport/topo"
)

// localOf returns the local rank (how many lower ranks share my hash) and
// the local size (how many ranks share it) from everyone's host hashes.
func localOf(hashes []uint64, rank int) (localRank, localSize int) {
	for r, h := range hashes {
		if h != hashes[rank] {
			continue
		}
		if r < rank {
			localRank++
		}
		localSize++
	}
	return localRank, localSize
}

// learnLocal all-gathers the host hashes over c (a collective over c).
func learnLocal(e *executor, c *Comm, deadline time.Time) (localRank, localSize int, err error) {
	all, err := c.allgather(e, binary.LittleEndian.AppendUint64(nil, topo.HostHash()), deadline)
	if err != nil {
		return 0, 0, err
	}
	hashes := make([]uint64, c.size)
	for r := range hashes {
		hashes[r] = binary.LittleEndian.Uint64(all[8*r:])
	}
	localRank, localSize = localOf(hashes, c.rank)
	return localRank, localSize, nil
}

// LocalRank returns this process's rank among the processes on its host
// (0 before Init/Join). Use it to pick a GPU: device = LocalRank().
func LocalRank() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.localRank
}

// LocalSize returns how many processes of the job run on this host (0 before Init/Join).
func LocalSize() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.localSize
}
