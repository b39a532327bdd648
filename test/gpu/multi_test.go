package gpu

import (
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// groupAllReduce runs one group of all-reduces (sizes on both sides of the
// one-shot threshold, every operator) over comms driven by this goroutine
// and checks every rank's result.
func groupAllReduce(t *testing.T, comms []*comm.Comm) []error {
	nranks := comms[0].Count()
	var failures []error
	for ci, count := range []int{1, 4099, 1000003} {
		for _, op := range gccl.RedOps() {
			dt := []gccl.DataType{gccl.Float32, gccl.BFloat16, gccl.Int64}[ci]
			seed := uint64(1000 + 10*ci + int(op))
			bufs := make([]*harness.Buffers, len(comms))
			streams := make([]gccl.Stream, len(comms))
			ptrs := make([]uintptr, len(comms))
			g := group.New()
			for i, cm := range comms {
				bufs[i] = harness.NewBuffers(t, cm.Device())
				streams[i] = bufs[i].Stream()
				ptrs[i] = bufs[i].Alloc(count*dt.Size(), harness.Input(seed, cm.Rank(), dt, count))
				g.AllReduce(cm, ptrs[i], ptrs[i], count, dt, op, streams[i])
			}
			launchErr := g.End()
			want := reduce.Reference(harness.Inputs(seed, nranks, dt, count), dt, op, 0)
			for i, cm := range comms {
				err := launchErr
				if err == nil {
					err = mpiboot.Wait(cm.Device(), streams[i], 0)
				}
				if err == nil {
					err = reduce.Check(bufs[i].Read(ptrs[i], count*dt.Size()), want, dt, nranks)
				}
				if err != nil {
					failures = append(failures, fmt.Errorf("rank %d %v %v count %d: %w", cm.Rank(), dt, op, count, err))
				}
			}
		}
	}
	return failures
}

// TestSeveralGPUsPerProcess: two ranks per process driven by one
// goroutine in groups, so same-process peers share a process (peer access)
// and other processes' ranks use CUDA IPC. With -gccl.device every rank is
// on that one GPU; without, each rank needs a GPU of its own.
func TestSeveralGPUsPerProcess(t *testing.T) {
	requireGPUs(t, 2)
	harness.Agree(t, groupAllReduce(t, harness.LocalComms(t, 2, config(), *oneDevice)))
}

// TestInitAll: one process drives every GPU of the machine, up to 8, one
// rank each (comm.InitAllN; with one GPU, a one-rank communicator); it runs
// only when the test binary is not started by mpirun with more than one
// process.
func TestInitAll(t *testing.T) {
	if _, size := mpiboot.World(); size != 1 {
		t.Skip("InitAll is tested in a single process")
	}
	drv := cudatest.RequireGPU(t, 1)
	n, err := drv.DeviceCount()
	require.NoError(t, err)
	comms, err := comm.InitAllN(min(n, 8))
	require.NoError(t, err)
	for _, cm := range comms {
		t.Cleanup(func() { _ = cm.Close() })
	}
	for _, f := range groupAllReduce(t, comms) {
		t.Error(f)
	}
}
