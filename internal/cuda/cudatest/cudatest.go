// Package cudatest has helpers for tests that need a real GPU.
//
// RequireGPU skips a test on machines without a CUDA driver or with too few
// GPUs. With GCCL_REQUIRE_GPU=1 a machine with no GPU at all fails the test
// instead, so a GPU CI job can never pass by skipping everything; a machine
// with GPUs, but fewer than a test needs, still skips it with the reason.
package cudatest

import (
	"fmt"
	"os"
	"testing"

	"github.com/gccl/gccl/internal/cuda"
)

// RequireEnv is the variable that turns "no GPU" skips into failures.
const RequireEnv = "GCCL_REQUIRE_GPU"

// GPUs returns the real driver and how many GPUs it sees, or an error
// saying why there is no GPU at all (no driver, or a driver with none).
func GPUs() (cuda.Driver, int, error) {
	d, err := cuda.Load()
	if err != nil {
		return nil, 0, fmt.Errorf("no CUDA driver: %w", err)
	}
	count, err := d.DeviceCount()
	if err != nil {
		return nil, 0, fmt.Errorf("cuDeviceGetCount: %w", err)
	}
	if count < 1 {
		return nil, 0, fmt.Errorf("the CUDA driver sees no GPU")
	}
	return d, count, nil
}

// RequireGPU returns the real driver when at least n GPUs are present.
// With none at all it skips t, or fails it when GCCL_REQUIRE_GPU=1; with
// some, but fewer than n, it skips t ("needs n GPUs, found k").
func RequireGPU(t testing.TB, n int) cuda.Driver {
	t.Helper()
	d, count, err := GPUs()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1: %v", RequireEnv, err)
		} else {
			t.Skip(err)
		}
		return nil
	}
	return need(t, d, n, count)
}

// need skips t unless count >= n.
func need(t testing.TB, d cuda.Driver, n, count int) cuda.Driver {
	t.Helper()
	if count < n {
		t.Skipf("needs %d GPUs, found %d", n, count)
		return nil
	}
	return d
}
