package mpiboot

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fill returns n pseudo-random bytes every rank can recompute from the seeds.
func fill(n int, seeds ...uint64) []byte {
	rng := rand.New(rand.NewPCG(seeds[0], seeds[len(seeds)-1]^uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func poisoned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xA5
	}
	return b
}

func TestWorldAndLevel(t *testing.T) {
	rank, size := World()
	require.GreaterOrEqual(t, size, 1)
	require.True(t, rank >= 0 && rank < size)
	req, _ := parseLevel(*level)
	assert.GreaterOrEqual(t, Level(), req, "MPI granted less than requested: %v", Level())
	all, err := Allgather(binary.LittleEndian.AppendUint32(nil, uint32(rank)))
	require.NoError(t, err)
	for r := range size {
		assert.Equal(t, uint32(r), binary.LittleEndian.Uint32(all[4*r:]))
	}
}

func TestBcastFromEveryRoot(t *testing.T) {
	rank, size := World()
	for root := range size {
		for _, n := range []int{0, 1, 7, 4096, 1<<20 + 3} {
			want := fill(n, uint64(root), 11)
			buf := poisoned(n)
			if rank == root {
				copy(buf, want)
			}
			require.NoError(t, Bcast(buf, root))
			require.Equal(t, want, buf, "root %d, %d bytes", root, n)
		}
	}
}

func TestAllgatherRandom(t *testing.T) {
	rank, size := World()
	for _, n := range []int{0, 1, 13, 65536 + 5} {
		got, err := Allgather(fill(n, uint64(rank), 7))
		require.NoError(t, err)
		require.Len(t, got, n*size)
		for r := range size {
			require.Equal(t, fill(n, uint64(r), 7), got[r*n:(r+1)*n], "block of rank %d, %d bytes", r, n)
		}
	}
}

func TestMismatchedLengthsAreInvalidArgument(t *testing.T) {
	rank, size := World()
	if size < 2 {
		t.Skip("needs 2 or more processes (run under mpirun)")
	}
	_, err := Allgather(make([]byte, 4+rank%2))
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)

	buf := poisoned(16 + rank) // only the root (0) has the length it broadcasts
	err = Bcast(buf, 0)
	if rank == 0 {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	}
	// The job is still in step afterwards.
	want := fill(100, 5, 5)
	buf = poisoned(100)
	if rank == size-1 {
		copy(buf, want)
	}
	require.NoError(t, Bcast(buf, size-1))
	require.Equal(t, want, buf)
}

func TestBadArguments(t *testing.T) {
	_, size := World()
	for _, root := range []int{-1, size, size + 5} {
		err := Bcast([]byte{1}, root)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument)
		var e *gccl.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "root", e.Arg)
	}
	require.ErrorIs(t, SetTimeout(0), gccl.ErrInvalidArgument)
	require.ErrorIs(t, SetTimeout(-time.Second), gccl.ErrInvalidArgument)
	require.ErrorIs(t, InitThread(ThreadLevel(7)), gccl.ErrInvalidArgument)
	require.ErrorIs(t, Join(), gccl.ErrInvalidUsage, "Join after Init")
}

func TestBarrierAndIprobe(t *testing.T) {
	for range 20 {
		require.NoError(t, Barrier())
	}
	pending, err := Iprobe()
	require.NoError(t, err)
	assert.False(t, pending, "nobody sends point-to-point messages on mpiboot's communicator")
}

func TestLocalRankOnOneHost(t *testing.T) {
	// mpirun in the tests starts every process on this host.
	rank, size := World()
	assert.Equal(t, rank, LocalRank())
	assert.Equal(t, size, LocalSize())
}

func TestCollectiveTimesOutWhenAPeerIsLate(t *testing.T) {
	rank, size := World()
	if size < 2 {
		t.Skip("needs 2 or more processes (run under mpirun)")
	}
	require.NoError(t, Barrier())
	require.NoError(t, SetTimeout(200*time.Millisecond))
	if rank == 0 {
		start := time.Now()
		err := Barrier()
		require.ErrorIs(t, err, gccl.ErrTimeout)
		assert.Less(t, time.Since(start), 5*time.Second)
	} else {
		time.Sleep(time.Second)
		// Matches rank 0's abandoned barrier, which completes in the background.
		require.NoError(t, SetTimeout(time.Minute))
		require.NoError(t, Barrier())
	}
	require.NoError(t, SetTimeout(time.Minute))
	require.NoError(t, Barrier())
}

func TestThreadLevelString(t *testing.T) {
	names := map[string]bool{}
	for l := Single; l <= Multiple; l++ {
		names[l.String()] = true
	}
	assert.Len(t, names, 4)
	assert.Equal(t, "MPI_THREAD_FUNNELED", Funneled.String())
	assert.Equal(t, "ThreadLevel(9)", ThreadLevel(9).String())
}
