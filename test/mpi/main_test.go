package mpi

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

var (
	opTimeout = flag.Duration("gccl.timeout", time.Minute, "deadline of every gccl and MPI wait in these tests")
	oneDevice = flag.Int("gccl.device", -1, "put every rank on this device (>= 0: several processes and ranks share one GPU, for machines with one)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(harness.RunUnderMPI(m, *opTimeout))
}

// config is the configuration of the tests' communicators: the default
// backend (GPU where present, else host; GCCL_DEVICE=host forces the host),
// the tests' deadline and -gccl.device.
func config() *comm.Config {
	c := &comm.Config{Timeout: *opTimeout, Name: "mpitest"}
	if *oneDevice >= 0 {
		c.Device, c.DeviceSet = *oneDevice, true
	}
	return c
}

// requireDevices skips the test when the backend is CUDA and the processes
// of this machine need more GPUs for perProcess ranks each than it has;
// -gccl.device puts every rank on one GPU instead. The host backend has
// devices enough.
func requireDevices(t *testing.T, perProcess int) {
	t.Helper()
	if *oneDevice >= 0 || env.Get().Device == "host" {
		return
	}
	if _, n, err := cudatest.GPUs(); err == nil && n < perProcess*mpiboot.LocalSize() {
		t.Skipf("needs %d GPUs, found %d (-gccl.device 0 shares one)", perProcess*mpiboot.LocalSize(), n)
	}
}

// world makes a communicator over every process and closes it after the test.
func world(t *testing.T) *comm.Comm {
	t.Helper()
	c, err := mpiboot.NewComm(config())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
