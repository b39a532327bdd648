package mpi

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/mpiboot"
	"github.com/stretchr/testify/require"
)

var opTimeout = flag.Duration("gccl.timeout", time.Minute, "deadline of every gccl and MPI wait in these tests")

func TestMain(m *testing.M) {
	flag.Parse()
	if err := mpiboot.Init(); err != nil {
		fmt.Fprintln(os.Stderr, "mpiboot.Init:", err)
		os.Exit(1)
	}
	if err := mpiboot.SetTimeout(*opTimeout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := mpiboot.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "mpiboot.Finalize:", err)
		code = 1
	}
	os.Exit(code)
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

// agree fails the test on every process when any process recorded an error,
// so that all of them stop (or go on) together. It returns whether all passed.
func agree(t *testing.T, failures []error) bool {
	t.Helper()
	for i, err := range failures {
		if i == 10 {
			t.Errorf("... and %d more", len(failures)-10)
			break
		}
		t.Error(err)
	}
	flag := []byte{0}
	if len(failures) > 0 {
		flag[0] = 1
	}
	all, err := mpiboot.Allgather(flag)
	require.NoError(t, err)
	for r, f := range all {
		if f != 0 {
			rank, _ := mpiboot.World()
			if r != rank {
				t.Errorf("process %d failed (see its output)", r)
			}
			return false
		}
	}
	return true
}
