package fault

import (
	"testing"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/stretchr/testify/require"
)

// makeComms creates an n-rank host communicator in this process with the
// given deadline. The tests tear the ranks down themselves (that is what
// they test); a cleanup aborts whatever is left.
func makeComms(t *testing.T, n int, timeout time.Duration) []*comm.Comm {
	t.Helper()
	comms, err := NewComms(n, timeout, t.Name())
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			_ = c.Abort()
		}
	})
	return comms
}

// makeBufs allocates send and recv buffers of size bytes on every comm's
// device (rank r's seeded with r), freed after the test.
func makeBufs(t *testing.T, comms []*comm.Comm, size int) []*Bufs {
	t.Helper()
	bufs := make([]*Bufs, len(comms))
	for r, c := range comms {
		b, err := NewBufs(c, size, uint64(r))
		require.NoError(t, err)
		t.Cleanup(b.Free)
		bufs[r] = b
	}
	return bufs
}

// countResources counts resources after making sure the process's root
// listener exists (it lives as long as the process).
func countResources(t *testing.T) Resources {
	t.Helper()
	_, err := comm.NewUniqueID()
	require.NoError(t, err)
	r, err := CountResources()
	require.NoError(t, err)
	return r
}

// settle fails the test unless the counts come back to before within 5 s.
func settle(t *testing.T, before Resources) {
	t.Helper()
	now, err := Settle(before, 5*time.Second)
	require.NoError(t, err)
	t.Logf("resources: before %v, after %v", before, now)
}
