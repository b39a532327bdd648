package cudatest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fakeTB records what RequireGPU does with a test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skipf(string, ...any)  { f.skipped = true }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }

func TestRequireGPU(t *testing.T) {
	old, had := os.LookupEnv(RequireEnv)
	t.Cleanup(func() {
		if had {
			os.Setenv(RequireEnv, old)
		} else {
			os.Unsetenv(RequireEnv)
		}
	})
	os.Unsetenv(RequireEnv)
	f := &fakeTB{TB: t}
	d := RequireGPU(f, 1<<20) // no machine has a million GPUs
	assert.Nil(t, d)
	assert.True(t, f.skipped)
	assert.False(t, f.failed)

	os.Setenv(RequireEnv, "1")
	f = &fakeTB{TB: t}
	assert.Nil(t, RequireGPU(f, 1<<20))
	assert.True(t, f.failed)
	assert.False(t, f.skipped)
}
