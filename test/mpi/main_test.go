package mpi

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

var opTimeout = flag.Duration("gccl.timeout", time.Minute, "deadline of every gccl and MPI wait in these tests")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(harness.RunUnderMPI(m, *opTimeout))
}

// config is the configuration of the tests' communicators: the default
// backend (GPU where present, else host; GCCL_DEVICE=host forces the host)
// and the tests' deadline.
func config() *comm.Config {
	return &comm.Config{Timeout: *opTimeout, Name: "mpitest"}
}

// world makes a communicator over every process and closes it after the test.
func world(t *testing.T) *comm.Comm {
	t.Helper()
	c, err := mpiboot.NewComm(config())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
