package mpiboot

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
)

// noProgress removes mpiboot's progress hook for TestProgressWhileInGccl, to
// show the deadlock the hook prevents: with it the test fails (timeout).
var noProgress = flag.Bool("mpiboot.noprogress", false, "run TestProgressWhileInGccl without the progress hook (it must then fail)")

// withoutProgress removes the hook until the test ends.
func withoutProgress(t *testing.T) {
	st.mu.Lock()
	st.unhook()
	st.mu.Unlock()
	t.Cleanup(func() {
		st.mu.Lock()
		st.unhook = installProgress(st.owned || st.level == Multiple)
		st.mu.Unlock()
	})
}

// progressBytes is more than any eager limit: MPI needs the receiver's
// progress (rendezvous) before the send completes.
const progressBytes = 16 << 20

// TestProgressWhileInGccl is the deadlock of NCCL guide §4.2.1: rank 1 has
// posted an MPI receive and waits inside gccl (an AllReduce's Synchronize);
// rank 0 joins that AllReduce only once its MPI send has completed, which
// needs rank 1's MPI to progress. Only mpiboot's hook, probing MPI while
// rank 1 waits in gccl, lets both finish.
func TestProgressWhileInGccl(t *testing.T) {
	rank, size := World()
	if size < 2 {
		t.Skip("needs 2 processes or more (mpirun)")
	}
	timeout := time.Minute
	if *noProgress {
		withoutProgress(t)
		timeout = 5 * time.Second
	}
	g, err := NewComm(&comm.Config{Backend: device.Host, Timeout: timeout, Name: "progress"})
	require.NoError(t, err)
	defer g.Abort()
	d := g.Device()
	s, err := d.NewStream()
	require.NoError(t, err)
	defer d.DestroyStream(s)
	big, err := d.Alloc(progressBytes) // rank 0's MPI message; the AllReduce's one byte
	require.NoError(t, err)
	defer d.Free(big)
	in, err := d.Alloc(progressBytes) // rank 1's MPI receive buffer
	require.NoError(t, err)
	defer d.Free(in)
	pattern(device.HostBytes(big, progressBytes), rank)
	w, err := world()
	require.NoError(t, err)
	if rank == 1 { // posted before rank 0 sends: only rank 1's progress can match it
		r, err := w.Irecv(in, progressBytes, 0, 7)
		require.NoError(t, err)
		defer r.Wait() // on failure too: MPI must be done with in before it is freed
		defer func() {
			require.NoError(t, r.Wait())
			want := make([]byte, progressBytes)
			pattern(want, 0)
			assert.Equal(t, want, device.HostBytes(in, progressBytes))
		}()
	}
	require.NoError(t, Barrier())
	if rank == 0 { // the AllReduce waits for this send, which waits for rank 1's MPI
		// Let rank 1 leave the barrier's last MPI call and enter gccl first:
		// a message that reached it while it still polled the barrier would match there.
		time.Sleep(200 * time.Millisecond)
		r, err := w.Isend(big, progressBytes, 1, 7)
		require.NoError(t, err)
		require.NoError(t, r.Wait())
	}
	require.NoError(t, coll.AllReduce(g, big, big, 1, gccl.Uint8, gccl.Max, s))
	require.NoError(t, d.Synchronize(s), "waiting inside gccl for a peer stuck in MPI")
	require.NoError(t, g.Finalize())
}

// pattern fills b with bytes that depend on seed and position.
func pattern(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i>>8)
	}
}
