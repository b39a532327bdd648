package gpu

import (
	"flag"
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
)

var sharedRanks = flag.Int("gccl.shared", 0, "TestSharedGPU: this many ranks (2-8) in this one process, all on GPU max(-gccl.device, 0)")

// TestSharedGPU runs the collective matrix (-gccl.counts, -gccl.types,
// -gccl.part) with -gccl.shared ranks in one process, every rank on the
// same GPU. Kernels of one context run concurrently, as they do across
// GPUs, so a machine with one GPU checks every kernel the ranks would run
// across GPUs, one-shot and staged. It runs only when asked, in a single
// process.
func TestSharedGPU(t *testing.T) {
	n := *sharedRanks
	if n < 2 {
		t.Skip("set -gccl.shared N (2 to 8) to run N ranks on one GPU in this process")
	}
	if _, size := mpiboot.World(); size != 1 {
		t.Skip("-gccl.shared runs in a single process")
	}
	dev := max(*oneDevice, 0)
	cudatest.RequireGPU(t, dev+1)
	w := newSharedWorld(t, harness.LocalComms(t, n, config(), dev))
	for _, c := range collCases(t, n) {
		var failures []error
		t.Run(c.String(), func(t *testing.T) {
			failures = w.run(c.Prepare(n))
			for _, f := range failures {
				t.Error(f)
			}
		})
		if len(failures) > 0 {
			return // a kernel that failed may leave the others waiting
		}
	}
}

// sharedWorld is every rank of a communicator in this process, with a
// stream and reused buffers each.
type sharedWorld struct {
	comms   []*comm.Comm
	streams []gccl.Stream
	scratch []*harness.Scratch
}

func newSharedWorld(t *testing.T, comms []*comm.Comm) *sharedWorld {
	w := &sharedWorld{comms: comms}
	for _, cm := range comms {
		w.streams = append(w.streams, harness.NewBuffers(t, cm.Device()).Stream())
		w.scratch = append(w.scratch, harness.NewScratch(t, cm.Device()))
	}
	return w
}

// run launches case d on every rank from this goroutine, waits for every
// stream and checks every rank's output.
func (w *sharedWorld) run(d *harness.Data) []error {
	recvs, errs := make([]uintptr, len(w.comms)), make([]error, len(w.comms))
	for r, cm := range w.comms {
		recvs[r], errs[r] = d.Launch(cm, w.scratch[r], w.streams[r])
	}
	var failures []error
	for r, cm := range w.comms {
		err := errs[r]
		if err == nil {
			err = cm.Device().Synchronize(w.streams[r])
		}
		if err == nil {
			err = cm.AsyncError()
		}
		if err == nil {
			err = d.Check(r, w.scratch[r], recvs[r])
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("rank %d: %v: %w", r, d.Case, err))
		}
	}
	return failures
}
