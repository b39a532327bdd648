package mpi

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreateFinalizeClose(t *testing.T) {
	rank, size := mpiboot.World()
	dev := mpiboot.LocalRank() // one device per process, or -gccl.device for all
	if *oneDevice >= 0 {
		dev = *oneDevice
	}
	for range 3 {
		c, err := mpiboot.NewComm(config())
		require.NoError(t, err)
		require.NoError(t, c.Status())
		assert.Equal(t, size, c.Count())
		assert.Equal(t, rank, c.Rank())
		assert.Equal(t, dev, c.Device().Ordinal())
		require.NoError(t, c.Finalize())
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "Close twice")
		err = coll.AllReduce(c, 1, 1, 1, gccl.Float32, gccl.Sum, 0)
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "AllReduce on a closed communicator")
	}
}

// colouring gives a process's colour and key for Split.
type colouring struct {
	name string
	of   func(rank, size int) (color, key int)
}

var colourings = []colouring{
	{"one", func(r, n int) (int, int) { return 0, 0 }},
	{"parity", func(r, n int) (int, int) { return r % 2, r }},
	{"halves-reversed", func(r, n int) (int, int) { return b2i(r < n/2), n - r }},
	{"singletons", func(r, n int) (int, int) { return r, 0 }},
	{"rank0-out", func(r, n int) (int, int) {
		if r == 0 {
			return comm.SplitNoColor, 0
		}
		return 7, r
	}},
	{"thirds-shuffled", func(r, n int) (int, int) { return r % 3, rand.New(rand.NewPCG(42, uint64(n))).Perm(n)[r] }},
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// members lists, in new-rank order, the world ranks that share my colour.
func members(col colouring, rank, size int) []int {
	color, _ := col.of(rank, size)
	var m []int
	for r := range size {
		if c, _ := col.of(r, size); c == color {
			m = append(m, r)
		}
	}
	slices.SortStableFunc(m, func(a, b int) int {
		_, ka := col.of(a, size)
		_, kb := col.of(b, size)
		return cmp.Compare(ka, kb)
	})
	return m
}

func TestSplitColourings(t *testing.T) {
	rank, size := mpiboot.World()
	parent := world(t)
	for _, col := range colourings {
		t.Run(col.name, func(t *testing.T) {
			color, key := col.of(rank, size)
			sub, err := parent.Split(color, key, config())
			require.NoError(t, err)
			if color == comm.SplitNoColor {
				require.Nil(t, sub)
				harness.Agree(t, nil)
				return
			}
			require.NotNil(t, sub)
			defer sub.Close()
			want := members(col, rank, size)
			var failures []error
			if sub.Count() != len(want) || sub.Rank() != slices.Index(want, rank) {
				failures = append(failures, fmt.Errorf("split %q: rank %d/%d, want %d/%d (members %v)",
					col.name, sub.Rank(), sub.Count(), slices.Index(want, rank), len(want), want))
			}
			failures = append(failures, checkMembers(t, sub, want)...)
			harness.Agree(t, failures)
		})
	}
}

// checkMembers all-reduces each member's world rank over sub and checks the sum.
func checkMembers(t *testing.T, sub *comm.Comm, want []int) []error {
	rank, _ := mpiboot.World()
	bufs := harness.NewBuffers(t, sub.Device())
	s := bufs.Stream()
	p := bufs.Alloc(8, binary.LittleEndian.AppendUint64(nil, uint64(rank)))
	if err := coll.AllReduce(sub, p, p, 1, gccl.Int64, gccl.Sum, s); err != nil {
		return []error{err}
	}
	if err := mpiboot.Wait(sub.Device(), s, 0); err != nil {
		return []error{err}
	}
	sum := uint64(0)
	for _, r := range want {
		sum += uint64(r)
	}
	if got := binary.LittleEndian.Uint64(bufs.Read(p, 8)); got != sum {
		return []error{fmt.Errorf("sum of member ranks over the split communicator: got %d, want %d", got, sum)}
	}
	return nil
}

func TestNonblockingInit(t *testing.T) {
	cfg := config()
	cfg.Blocking = new(bool)
	c, err := mpiboot.NewComm(cfg)
	require.NoError(t, err)
	defer c.Close()
	deadline := time.Now().Add(*opTimeout)
	for errors.Is(c.Status(), gccl.ErrInProgress) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, c.Status())
	require.NoError(t, c.Finalize())
}

func TestAbortIsPromptAndFinal(t *testing.T) {
	c := world(t)
	start := time.Now()
	require.NoError(t, c.Abort())
	assert.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, c.Abort(), "Abort twice")
	require.NoError(t, c.Close(), "Close after Abort")
	require.ErrorIs(t, coll.AllReduce(c, 1, 1, 1, gccl.Float32, gccl.Sum, 0), gccl.ErrInvalidUsage)
	require.NoError(t, mpiboot.Barrier())
}

// TestPeerAbortReachesTheOthers: the last process aborts its communicator
// instead of joining an AllReduce; every other process must get an error
// (remote or timeout) from its stream, not hang.
func TestPeerAbortReachesTheOthers(t *testing.T) {
	rank, size := mpiboot.World()
	if size < 2 {
		t.Skip("needs 2 or more processes")
	}
	cfg := config()
	cfg.Timeout = 10 * time.Second
	c, err := mpiboot.NewComm(cfg)
	require.NoError(t, err)
	defer c.Close()
	if rank == size-1 {
		require.NoError(t, c.Abort())
	} else {
		bufs := harness.NewBuffers(t, c.Device())
		s := bufs.Stream()
		p := bufs.Alloc(4096, harness.Input(1, rank, gccl.Float32, 1024))
		start := time.Now()
		err := coll.AllReduce(c, p, p, 1024, gccl.Float32, gccl.Sum, s)
		if err == nil {
			err = c.Device().Synchronize(s)
		}
		if err == nil { // a GPU kernel that gave up ends; the engine reports it (ncclCommGetAsyncError)
			err = c.AsyncError()
		}
		require.Error(t, err, "AllReduce with an aborted peer must fail")
		assert.True(t, errors.Is(err, gccl.ErrRemote) || errors.Is(err, gccl.ErrTimeout), "got %v", err)
		assert.Less(t, time.Since(start), 30*time.Second)
	}
	require.NoError(t, mpiboot.Barrier())
}
