package cudatest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fakeTB records what RequireGPU does with a test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Skip(args ...any)          { f.skipped, f.msg = true, fmt.Sprint(args...) }
func (f *fakeTB) Skipf(s string, a ...any)  { f.skipped, f.msg = true, fmt.Sprintf(s, a...) }
func (f *fakeTB) Fatalf(s string, a ...any) { f.failed, f.msg = true, fmt.Sprintf(s, a...) }

// TestTooFewGPUsSkips: a machine with GPUs, but fewer than a test needs,
// skips it with the reason, GCCL_REQUIRE_GPU or not.
func TestTooFewGPUsSkips(t *testing.T) {
	for _, req := range []string{"", "1"} {
		t.Setenv(RequireEnv, req)
		f := &fakeTB{TB: t}
		assert.Nil(t, need(f, nil, 2, 1))
		assert.True(t, f.skipped, "GCCL_REQUIRE_GPU=%q", req)
		assert.False(t, f.failed)
		assert.Equal(t, "needs 2 GPUs, found 1", f.msg)
	}
	f := &fakeTB{TB: t}
	need(f, nil, 1, 1)
	assert.False(t, f.skipped || f.failed)
}

// TestNoGPU: with no GPU at all (this machine, when it has no driver)
// RequireGPU skips, and fails with GCCL_REQUIRE_GPU=1.
func TestNoGPU(t *testing.T) {
	if _, n, err := GPUs(); err == nil {
		t.Skipf("this machine has %d GPUs", n)
	}
	t.Setenv(RequireEnv, "")
	f := &fakeTB{TB: t}
	assert.Nil(t, RequireGPU(f, 1))
	assert.True(t, f.skipped)
	assert.False(t, f.failed)

	t.Setenv(RequireEnv, "1")
	f = &fakeTB{TB: t}
	assert.Nil(t, RequireGPU(f, 1))
	assert.True(t, f.failed)
	assert.False(t, f.skipped)
	assert.Contains(t, f.msg, RequireEnv+"=1")
}
