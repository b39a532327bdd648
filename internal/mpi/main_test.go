package mpi

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/gccl/gccl"
)

// levels are the values of -mpi.level.
var levels = map[string]Level{"single": Single, "funneled": Funneled, "serialized": Serialized, "multiple": Multiple}

var level = flag.String("mpi.level", "multiple", "thread level Init requests: single, funneled, serialized or multiple")

// TestMain runs the tests in one MPI job, a singleton under go test or N
// processes under mpirun (test/run.sh), between Init and Finalize, and
// checks that every call fails before the one and after the other.
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	required, ok := levels[*level]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown -mpi.level %q\n", *level)
		return 2
	}
	err := checkNotRunning("before Init")
	if _, jerr := Join(); err == nil && !errors.Is(jerr, gccl.ErrInvalidUsage) {
		err = fmt.Errorf("Join before MPI_Init must fail with InvalidUsage, got %v", jerr)
	}
	if err == nil {
		var granted Level
		if granted, err = Init(required); err == nil && granted < required {
			err = fmt.Errorf("MPI granted %v, less than %v", granted, required)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "internal/mpi test setup:", err)
		return 1
	}
	code := m.Run()
	if err := firstErr(Finalize(), Finalize(), checkNotRunning("after Finalize")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := Init(required); !errors.Is(err, gccl.ErrInvalidUsage) {
		fmt.Fprintln(os.Stderr, "a second Init must fail with InvalidUsage, got", err)
		return 1
	}
	return code
}

// checkNotRunning verifies that every MPI call fails with InvalidUsage.
func checkNotRunning(when string) error {
	_, err1 := World()
	_, err2 := Iprobe()
	_, err3 := Dup(FromWorld, 0)
	_, err4 := NewCollectives()
	_, _, err5 := Appnum()
	_, err6 := CUDAAware()
	for i, err := range []error{err1, err2, err3, err4, err5, err6, Abort(3)} {
		if !errors.Is(err, gccl.ErrInvalidUsage) {
			return fmt.Errorf("call %d %s: got %v, want InvalidUsage", i, when, err)
		}
	}
	return nil
}

// world is World's communicator, for tests that run after Init.
func world(t *testing.T) *Comm {
	t.Helper()
	w, err := World()
	if err != nil {
		t.Fatal(err)
	}
	return w
}
