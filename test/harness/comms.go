package harness

import (
	"errors"
	"sync"
	"testing"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/mpiboot"
	"github.com/stretchr/testify/require"
)

// LocalComms makes one communicator over every process with per ranks in
// each (process p holds ranks p·per to p·per+per-1), closed after the test.
// With dev < 0 they take GPUs of their own (mpiboot.NewComms); with
// dev >= 0 every rank of every process is on device dev, so that a machine
// with one GPU runs several ranks per process.
func LocalComms(t *testing.T, per int, cfg *comm.Config, dev int) []*comm.Comm {
	t.Helper()
	if dev < 0 {
		comms, err := mpiboot.NewComms(per, cfg)
		require.NoError(t, err)
		closeAfter(t, comms)
		return comms
	}
	id, err := mpiboot.ShareUniqueID()
	require.NoError(t, err)
	rank, size := mpiboot.World()
	var c comm.Config
	if cfg != nil {
		c = *cfg
	}
	c.Device, c.DeviceSet = dev, true
	comms, errs := make([]*comm.Comm, per), make([]error, per)
	var wg sync.WaitGroup
	for i := range per {
		wg.Go(func() { comms[i], errs[i] = comm.InitRankConfig(size*per, id, rank*per+i, &c) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, cm := range comms {
			_ = cm.Abort()
		}
		require.NoError(t, err)
	}
	closeAfter(t, comms)
	return comms
}

func closeAfter(t *testing.T, comms []*comm.Comm) {
	for _, cm := range comms {
		t.Cleanup(func() { _ = cm.Close() })
	}
}
