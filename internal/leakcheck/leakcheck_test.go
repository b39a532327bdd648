package leakcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

// TestLeaksAreFound leaks one of each resource on purpose: the check must
// name all four, and find nothing once they are released.
func TestLeaksAreFound(t *testing.T) {
	s := Take()

	stop := make(chan struct{})
	go func() { <-stop }()
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	shm := filepath.Join(ShmDir, fmt.Sprintf("gccl-%d-leakcheck-test", os.Getpid()))
	if err := os.WriteFile(shm, nil, 0o600); err != nil {
		t.Skipf("cannot write to %s: %v", ShmDir, err)
	}
	fake := cudafake.New(cudafake.Config{})
	host, err := fake.MemHostAlloc(64, 0)
	require.NoError(t, err)

	leaks := strings.Join(s.Leaks(50*time.Millisecond), "\n")
	assert.Contains(t, leaks, "goroutine still running")
	assert.Contains(t, leaks, "TestLeaksAreFound.func1", "the goroutine's stack names it")
	assert.Contains(t, leaks, "still open: "+os.DevNull)
	assert.Contains(t, leaks, "shared-memory file left: "+shm)
	assert.Contains(t, leaks, "1 fake-driver allocation(s) not freed")

	close(stop)
	require.NoError(t, f.Close())
	require.NoError(t, os.Remove(shm))
	require.NoError(t, fake.MemFreeHost(host))
	assert.Empty(t, s.Leaks(time.Second), "everything was released")
}

// TestOtherProcessesFilesAreNotCounted: a gccl file of another pid is
// not this process's leak.
func TestOtherProcessesFilesAreNotCounted(t *testing.T) {
	s := Take()
	other := filepath.Join(ShmDir, fmt.Sprintf("gccl-%d-leakcheck-test", os.Getpid()+1_000_000))
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Skipf("cannot write to %s: %v", ShmDir, err)
	}
	defer os.Remove(other)
	assert.Empty(t, s.Leaks(0))
}
