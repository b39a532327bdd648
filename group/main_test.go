package group_test

import (
	"os"
	"testing"
)

// TestMain runs the group tests on the host backend, also on a GPU
// machine: they use InitAll over several devices and read buffers through
// host views. Their GPU counterparts (groups of operations on device
// buffers, ranks sharing a GPU) are in test/gpu and test/random.
func TestMain(m *testing.M) {
	if os.Getenv("GCCL_DEVICE") == "" {
		_ = os.Setenv("GCCL_DEVICE", "host")
	}
	os.Exit(m.Run())
}
