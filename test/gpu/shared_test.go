package gpu

import (
	"errors"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

var sharedRanks = flag.Int("gccl.shared", 0, "TestSharedGPU: this many ranks (2-8) in this one process, all on GPU max(-gccl.device, 0)")

// TestSharedGPU runs the collective matrix (-gccl.counts) with
// -gccl.shared ranks in one process, every rank on the same GPU. Kernels of
// one context run concurrently, as they do across GPUs, so a machine with
// one GPU checks every kernel the ranks would run across GPUs, one-shot
// and staged. It runs only when asked, in a single process.
func TestSharedGPU(t *testing.T) {
	n := *sharedRanks
	if n < 2 {
		t.Skip("set -gccl.shared N (2 to 8) to run N ranks on one GPU in this process")
	}
	if _, size := mpiboot.World(); size != 1 {
		t.Skip("-gccl.shared runs in a single process")
	}
	comms, streams := sharedComms(t, n, max(*oneDevice, 0))
	for _, c := range collCases(t, n) {
		var failures []error
		t.Run(c.String(), func(t *testing.T) {
			failures = runShared(t, c, comms, streams)
			for _, f := range failures {
				t.Error(f)
			}
		})
		if len(failures) > 0 {
			return // a kernel that failed may leave the others waiting
		}
	}
}

// sharedComms makes n ranks of one communicator on GPU dev, closed after
// the test, and a stream for each.
func sharedComms(t *testing.T, n, dev int) ([]*comm.Comm, []gccl.Stream) {
	cudatest.RequireGPU(t, dev+1)
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	comms, errs := make([]*comm.Comm, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			cfg := config()
			cfg.Device, cfg.DeviceSet = dev, true
			comms[r], errs[r] = comm.InitRankConfig(n, id, r, cfg)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	streams := make([]gccl.Stream, n)
	for r, cm := range comms {
		t.Cleanup(func() { _ = cm.Close() })
		streams[r] = harness.NewBuffers(t, cm.Device()).Stream()
	}
	return comms, streams
}

// runShared launches case c on every rank from this goroutine, waits for
// every stream and checks every rank's output.
func runShared(t *testing.T, c harness.Case, comms []*comm.Comm, streams []gccl.Stream) []error {
	n := len(comms)
	bufs, recvs, errs := make([]*harness.Buffers, n), make([]uintptr, n), make([]error, n)
	for r, cm := range comms {
		bufs[r] = harness.NewBuffers(t, cm.Device())
		recvs[r], errs[r] = c.Launch(cm, bufs[r], streams[r])
	}
	var failures []error
	for r, cm := range comms {
		err := errs[r]
		if err == nil {
			err = cm.Device().Synchronize(streams[r])
		}
		if err == nil {
			err = cm.AsyncError()
		}
		if want := c.Expected(r, n); err == nil && want != nil {
			err = reduce.Check(bufs[r].Read(recvs[r], len(want)), want, c.T, n)
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("rank %d: %v: %w", r, c, err))
		}
	}
	return failures
}
