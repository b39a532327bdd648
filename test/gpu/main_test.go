package gpu

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

var (
	opTimeout = flag.Duration("gccl.timeout", 2*time.Minute, "deadline of every gccl and MPI wait")
	fatbinDir = flag.String("gccl.fatbin-dir", "", "load the fatbin kernels/build.sh wrote here instead of the embedded one")
	full      = flag.Bool("gccl.full", false, "run the 64 MiB count for every type and operator")
	largeRun  = flag.Bool("gccl.large", true, "run the 64 MiB count (for a subset of types and operators unless -gccl.full)")
	oneDevice = flag.Int("gccl.device", -1, "put every rank on this GPU (>= 0: several processes share one GPU, for machines with one)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if (*sharedRanks > 1 || *oneDevice >= 0) && os.Getenv("CUDA_MODULE_LOADING") == "" {
		// Lazily loading a kernel may wait for the context's running
		// kernels: with several ranks in one context (TestSharedGPU, and
		// TestSeveralGPUsPerProcess on one GPU), a rank's first launch
		// would wait for a peer's kernel that waits for this rank.
		_ = os.Setenv("CUDA_MODULE_LOADING", "EAGER")
	}
	if *fatbinDir != "" {
		if err := kernels.UseBuilt(*fatbinDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(harness.RunUnderMPI(m, *opTimeout))
}

func config() *comm.Config {
	c := &comm.Config{Timeout: *opTimeout, Name: "gputest", Backend: device.CUDA}
	if *oneDevice >= 0 {
		c.Device, c.DeviceSet = *oneDevice, true
	}
	return c
}

// requireGPUs skips (or fails with GCCL_REQUIRE_GPU=1 and no GPU at all)
// unless this process's perProcess ranks each have a GPU: GPU -gccl.device
// when set (every rank shares it), else one of their own.
func requireGPUs(t *testing.T, perProcess int) {
	t.Helper()
	if *oneDevice >= 0 {
		cudatest.RequireGPU(t, *oneDevice+1)
		return
	}
	cudatest.RequireGPU(t, perProcess*mpiboot.LocalSize())
}

// world makes a GPU communicator over every process, closed after the test.
func world(t *testing.T) *comm.Comm {
	t.Helper()
	requireGPUs(t, 1)
	c, err := mpiboot.NewComm(config())
	require.NoError(t, err)
	require.Equal(t, device.CUDA, c.Device().Kind())
	t.Cleanup(func() { _ = c.Close() })
	return c
}
