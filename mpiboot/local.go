package mpiboot

import (
	"encoding/binary"

	"github.com/gccl/gccl/internal/mpi"
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

// learnLocal all-gathers the host hashes over m (a collective over m).
func learnLocal(m *mpi.Comm) (localRank, localSize int, err error) {
	all, err := allgather(m, binary.LittleEndian.AppendUint64(nil, topo.HostHash()))
	if err != nil {
		return 0, 0, err
	}
	hashes := make([]uint64, m.Size())
	for r := range hashes {
		hashes[r] = binary.LittleEndian.Uint64(all[8*r:])
	}
	localRank, localSize = localOf(hashes, m.Rank())
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
