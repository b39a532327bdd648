package bufreg_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain checks that the tests leave nothing behind. The bootstrap's root
// listener lives as long as the process (one per address, started by the
// first unique ID), so it is started before the check's snapshot.
func TestMain(m *testing.M) {
	if _, err := comm.NewUniqueID(); err != nil {
		panic(err)
	}
	leakcheck.Main(m)
}

// TestRegisterIsCollective: Register given a *comm.Comm is collective through
// the communicator's bootstrap: the ranks number their registrations
// alike (Seq 1, 2, ... on every rank; a local registration has Seq 0).
func TestRegisterIsCollective(t *testing.T) {
	const nranks = 3
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	reqs := make([]comm.InitReq, nranks)
	for r := range reqs {
		reqs[r] = comm.InitReq{NRanks: nranks, ID: id, Rank: r, Config: &comm.Config{Backend: device.Host}}
	}
	comms, err := comm.InitRanks(reqs)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			assert.NoError(t, c.Close())
		}
	})
	rng := rand.New(rand.NewPCG(rand.Uint64(), 14))
	for seq := uint64(1); seq <= 2; seq++ {
		mems, sizes := make([]uintptr, nranks), make([]int, nranks)
		for r, c := range comms {
			sizes[r] = 1 + rng.IntN(1<<16)
			mems[r], err = bufreg.MemAlloc(c.Device(), sizes[r])
			require.NoError(t, err)
		}
		hs, errs := make([]*bufreg.Handle, nranks), make([]error, nranks)
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Go(func() { hs[r], errs[r] = bufreg.Register(c, mems[r], sizes[r]) })
		}
		wg.Wait()
		for r := range comms {
			require.NoError(t, errs[r], "rank %d", r)
			reg, off, ok := commlink.Regs(comms[r]).Lookup(mems[r], sizes[r])
			require.True(t, ok, "rank %d: registered in the communicator's cache", r)
			assert.Zero(t, off)
			assert.Equal(t, seq, reg.Seq, "rank %d: registration %d is collective", r, seq)
			assert.Equal(t, mems[r], reg.Base)
			assert.Equal(t, sizes[r], reg.Size)
		}
		for r := range comms {
			require.NoError(t, bufreg.Deregister(hs[r]))
			require.NoError(t, bufreg.MemFree(mems[r]))
		}
	}
}

// TestCommCloseReleasesRegistrations: the registrations belong to the
// communicator; Close (or Abort) releases them, so their memory can be
// freed and their handles are deregistered.
func TestCommCloseReleasesRegistrations(t *testing.T) {
	for _, abort := range []bool{false, true} {
		const nranks = 2
		id, err := comm.NewUniqueID()
		require.NoError(t, err)
		reqs := make([]comm.InitReq, nranks)
		for r := range reqs {
			reqs[r] = comm.InitReq{NRanks: nranks, ID: id, Rank: r, Config: &comm.Config{Backend: device.Host}}
		}
		comms, err := comm.InitRanks(reqs)
		require.NoError(t, err)
		mems, hs, errs := make([]uintptr, nranks), make([]*bufreg.Handle, nranks), make([]error, nranks)
		for r, c := range comms {
			mems[r], err = bufreg.MemAlloc(c.Device(), 8192)
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Go(func() { hs[r], errs[r] = bufreg.Register(c, mems[r], 8192) })
		}
		wg.Wait()
		for r := range comms {
			require.NoError(t, errs[r])
			assert.ErrorIs(t, bufreg.MemFree(mems[r]), gccl.ErrInvalidUsage, "registered memory cannot be freed")
		}
		for _, c := range comms {
			if abort {
				require.NoError(t, c.Abort())
			} else {
				require.NoError(t, c.Close())
			}
		}
		for r, c := range comms {
			assert.ErrorIs(t, bufreg.Deregister(hs[r]), gccl.ErrInvalidUsage, "abort %v: the handle went with the communicator", abort)
			_, err := bufreg.Register(c, mems[r], 8192)
			assert.ErrorIs(t, err, gccl.ErrInvalidUsage, "registering with a closed communicator (as every call on one)")
			require.NoError(t, bufreg.MemFree(mems[r]), "abort %v: released with the communicator", abort)
		}
	}
}
