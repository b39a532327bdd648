package harness

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl/mpiboot"
	"github.com/stretchr/testify/require"
)

// RunUnderMPI initialises MPI, sets timeout as the deadline of every MPI
// wait, runs the tests and finalises MPI. It returns the exit code for
// os.Exit: 1 when MPI could not start or stop, else m.Run's.
func RunUnderMPI(m *testing.M, timeout time.Duration) int {
	if err := mpiboot.Init(); err != nil {
		fmt.Fprintln(os.Stderr, "mpiboot.Init:", err)
		return 1
	}
	if err := mpiboot.SetTimeout(timeout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := mpiboot.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "mpiboot.Finalize:", err)
		code = 1
	}
	return code
}

// Agree reports this process's failures (the first ten) and fails the test
// on every process when any process recorded one, so that all of them stop
// (or go on) together. It returns whether every process passed.
func Agree(t *testing.T, failures []error) bool {
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
