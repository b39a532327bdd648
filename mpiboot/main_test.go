package mpiboot

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/gccl/gccl"
)

// The tests of this package run in one MPI job: alone under `go test` (an
// MPI singleton) or as N processes under mpirun (test/run.sh). MPI starts
// once per process, so TestMain checks what must fail before Init and after
// Finalize around the tests.
var level = flag.String("mpiboot.level", "multiple", "thread level to request: single, funneled, serialized or multiple")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	required, err := parseLevel(*level)
	if err == nil {
		err = checkUnavailable("before Init")
	}
	if err == nil && !errors.Is(Join(), gccl.ErrInvalidUsage) {
		err = fmt.Errorf("Join before MPI_Init must fail with InvalidUsage")
	}
	if err == nil {
		err = InitThread(required)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpiboot test setup:", err)
		return 1
	}
	code := m.Run()
	if err := Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "Finalize:", err)
		return 1
	}
	if err := firstErr(Finalize(), checkUnavailable("after Finalize")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if !errors.Is(Init(), gccl.ErrInvalidUsage) {
		fmt.Fprintln(os.Stderr, "a second Init must fail with InvalidUsage")
		return 1
	}
	return code
}

func parseLevel(s string) (ThreadLevel, error) {
	for l := Single; l <= Multiple; l++ {
		if l.String() == "MPI_THREAD_"+upper(s) {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown -mpiboot.level %q", s)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// checkUnavailable verifies that every MPI operation fails with InvalidUsage.
func checkUnavailable(when string) error {
	_, err1 := Allgather([]byte{1})
	_, err2 := Iprobe()
	for i, err := range []error{Bcast([]byte{1}, 0), err1, Barrier(), err2, Abort(3)} {
		if !errors.Is(err, gccl.ErrInvalidUsage) {
			return fmt.Errorf("call %d %s: got %v, want InvalidUsage", i, when, err)
		}
	}
	return nil
}
