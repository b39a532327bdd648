package mpi

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

// noProgress removes the progress hook for TestProgressWhileInGccl, to show
// the deadlock the hook prevents: with it the test fails (timeout).
var noProgress = flag.Bool("mpi.noprogress", false, "run TestProgressWhileInGccl without the progress hook (it must then fail)")

// withoutProgress removes the hook until the test ends.
func withoutProgress(t *testing.T) {
	rt.mu.Lock()
	rt.unhook()
	rt.mu.Unlock()
	t.Cleanup(func() {
		rt.mu.Lock()
		rt.unhook = installProgress(true) // Init started MPI: the hook probes in the background too
		rt.mu.Unlock()
	})
}

// progressBytes is more than any eager limit: MPI needs the receiver's
// progress (rendezvous) before the send completes.
const progressBytes = 16 << 20

// TestProgressWhileInGccl is the deadlock of NCCL guide §4.2.1: rank 1 has
// posted an MPI receive and waits inside gccl (an AllReduce's Synchronize);
// rank 0 joins that AllReduce only once its MPI send has completed, which
// needs rank 1's MPI to progress. Only the hook, probing MPI while rank 1
// waits in gccl, lets both finish.
func TestProgressWhileInGccl(t *testing.T) {
	w := world(t)
	rank, size := w.Rank(), w.Size()
	if size < 2 {
		t.Skip("needs 2 processes or more (mpirun)")
	}
	timeout := time.Minute
	if *noProgress {
		withoutProgress(t)
		timeout = 5 * time.Second
	}
	g := newGcclComm(t, w, &comm.Config{Backend: device.Host, Timeout: timeout, Name: "progress"})
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
	require.NoError(t, w.Barrier())
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

// newGcclComm makes a gccl communicator of w's processes: rank 0's unique
// ID, broadcast over w.
func newGcclComm(t *testing.T, w *Comm, cfg *comm.Config) *comm.Comm {
	t.Helper()
	msg := make([]byte, comm.UniqueIDBytes)
	if w.Rank() == 0 {
		id, err := comm.NewUniqueID()
		require.NoError(t, err)
		copy(msg, id.Bytes())
	}
	require.NoError(t, w.Bcast(msg, 0))
	id, err := comm.ParseUniqueID(msg)
	require.NoError(t, err)
	g, err := comm.InitRankConfig(w.Size(), id, w.Rank(), cfg)
	require.NoError(t, err)
	return g
}

// pattern fills b with bytes that depend on seed and position.
func pattern(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i>>8)
	}
}
