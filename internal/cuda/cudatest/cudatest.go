// Package cudatest has helpers for tests that need a real GPU.
//
// RequireGPU skips a test on machines without a CUDA driver or with too few
// GPUs, and fails it instead when GCCL_REQUIRE_GPU=1, so a GPU CI job can
// never pass by skipping everything.
package cudatest

import (
	"os"
	"testing"

	"github.com/gccl/gccl/internal/cuda"
)

// RequireEnv is the variable that turns skips into failures.
const RequireEnv = "GCCL_REQUIRE_GPU"

// RequireGPU returns the real driver when at least n GPUs are present.
// Otherwise it skips t, or fails it when GCCL_REQUIRE_GPU=1.
func RequireGPU(t testing.TB, n int) cuda.Driver {
	t.Helper()
	d, err := cuda.Load()
	if err != nil {
		missing(t, "no CUDA driver: %v", err)
		return nil
	}
	count, err := d.DeviceCount()
	if err != nil {
		missing(t, "cuDeviceGetCount: %v", err)
		return nil
	}
	if count < n {
		missing(t, "test needs %d GPUs, found %d", n, count)
		return nil
	}
	return d
}

func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf(RequireEnv+"=1: "+format, args...)
		return
	}
	t.Skipf(format, args...)
}
