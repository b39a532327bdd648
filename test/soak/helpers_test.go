package soak

import (
	"testing"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/test/fault"
	"github.com/stretchr/testify/require"
)

// makeComms creates an n-rank host communicator in this process; a cleanup
// aborts whatever the test did not close.
func makeComms(t *testing.T, n int) []*comm.Comm {
	t.Helper()
	comms, err := fault.NewComms(n, 30*time.Second, "soak")
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			_ = c.Abort()
		}
	})
	return comms
}

func countResources(t *testing.T) fault.Resources {
	t.Helper()
	r, err := fault.CountResources()
	require.NoError(t, err)
	return r
}

// settle fails the test unless the counts come back to before within 5 s.
func settle(t *testing.T, before fault.Resources) {
	t.Helper()
	now, err := fault.Settle(before, 5*time.Second)
	require.NoError(t, err)
	t.Logf("resources: before %v, after %v", before, now)
}
