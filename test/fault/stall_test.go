package fault

import (
	"errors"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertNames asserts that err (and the rank's AsyncError) is ErrTimeout
// naming exactly want as the rank(s) it waited for.
func assertNames(t *testing.T, c *comm.Comm, err error, want string) {
	t.Helper()
	r := c.Rank()
	t.Logf("rank %d: %v", r, err)
	require.ErrorIs(t, err, gccl.ErrTimeout, "rank %d", r)
	assert.Equal(t, want, Blamed(err), "rank %d: %v", r, err)
	aerr := c.AsyncError()
	require.ErrorIs(t, aerr, gccl.ErrTimeout, "rank %d AsyncError", r)
	assert.Equal(t, want, Blamed(aerr), "rank %d AsyncError: %v", r, aerr)
}

// stallPaths are the host paths a stalled rank is named on.
var stallPaths = []struct{ name, shmDisable, algo string }{
	{"shm-zerocopy", "0", ""},
	{"shm-ring", "0", "ring"},
	{"shm-tree", "0", "tree"},
	{"tcp-ring", "1", "ring"},
	{"tcp-tree", "1", "tree"},
}

func setPath(t *testing.T, shmDisable, algo string) {
	t.Setenv("GCCL_SHM_DISABLE", shmDisable)
	t.Setenv("GCCL_ALGO", algo)
	env.Reload()
	t.Cleanup(func() { env.Reload() })
}

// TestStalledRankNamed: after an AllReduce every rank ran, rank 2 of 4
// stops taking part (it stays alive, never launching the next one). The
// survivors' timeouts, on Synchronize and AsyncError, name rank 2 and no
// other, though on a ring or tree most of them wait for a healthy rank
// that waits for rank 2.
func TestStalledRankNamed(t *testing.T) {
	const n, count, timeout, stalled = 4, 1 << 16, time.Second, 2
	for _, p := range stallPaths {
		t.Run(p.name, func(t *testing.T) {
			setPath(t, p.shmDisable, p.algo)
			comms := makeComms(t, n, timeout)
			bufs := makeBufs(t, comms, 4*count)
			launch := func(r int) error {
				return coll.AllReduce(comms[r], bufs[r].Send, bufs[r].Recv, count, gccl.Int32, gccl.Sum, bufs[r].S)
			}
			_, errs := gccltest.Parallel(n, func(r int) (struct{}, error) {
				if err := launch(r); err != nil {
					return struct{}{}, err
				}
				return struct{}{}, bufs[r].Dev.Synchronize(bufs[r].S)
			})
			for r := range n {
				require.NoError(t, errs[r], "warm-up on rank %d", r)
			}
			start := time.Now()
			_, errs = gccltest.Parallel(n, func(r int) (struct{}, error) {
				if r == stalled {
					return struct{}{}, nil
				}
				if err := launch(r); err != nil {
					return struct{}{}, err
				}
				return struct{}{}, bufs[r].Dev.Synchronize(bufs[r].S)
			})
			took := time.Since(start)
			for r := range n {
				if r != stalled {
					assertNames(t, comms[r], errs[r], "rank 2")
				}
			}
			assert.Less(t, took, 2*timeout)
			assert.NoError(t, comms[stalled].AsyncError(), "the stalled rank has no error")
		})
	}
}

// TestStalledRankNamedSendRecv: rank 0 receives from rank 1, which first
// receives from rank 2 and then sends to rank 0; rank 2 never sends. Rank
// 1 waits for rank 2, rank 0 for rank 1: both name rank 2.
func TestStalledRankNamedSendRecv(t *testing.T) {
	const n, count, timeout = 3, 1024, time.Second
	for _, tr := range []string{"0", "1"} {
		t.Run(map[string]string{"0": "shm", "1": "tcp"}[tr], func(t *testing.T) {
			setPath(t, tr, "")
			comms := makeComms(t, n, timeout)
			bufs := makeBufs(t, comms, 4*count)
			b0, b1 := bufs[0], bufs[1]
			require.NoError(t, p2p.Recv(comms[0], b0.Recv, count, gccl.Int32, 1, b0.S))
			require.NoError(t, p2p.Recv(comms[1], b1.Recv, count, gccl.Int32, 2, b1.S))
			require.NoError(t, p2p.Send(comms[1], b1.Send, count, gccl.Int32, 0, b1.S))
			_, errs := gccltest.Parallel(2, func(r int) (struct{}, error) { return struct{}{}, bufs[r].Dev.Synchronize(bufs[r].S) })
			assertNames(t, comms[0], errs[0], "rank 2")
			assertNames(t, comms[1], errs[1], "rank 2")
		})
	}
}

// TestStalledRankNamedWhilePeersAbort: as TestStalledRankNamed, but each
// survivor aborts its communicator as soon as its AllReduce fails, as an
// application does, and they start it 30 ms apart, as processes do. The
// first survivor's abort reaches the others while they are still collecting
// stall reports (a process that aborts is a lost peer to the others): their
// errors, and AsyncError, must still name rank 2, whose stall came first,
// not the healthy rank that aborted.
func TestStalledRankNamedWhilePeersAbort(t *testing.T) {
	const n, count, timeout, stalled, stagger = 4, 1 << 16, time.Second, 2, 30 * time.Millisecond
	for _, p := range []struct{ name, shmDisable, algo string }{stallPaths[0], stallPaths[3]} {
		t.Run(p.name, func(t *testing.T) {
			setPath(t, p.shmDisable, p.algo)
			comms := makeComms(t, n, timeout)
			bufs := makeBufs(t, comms, 4*count)
			launch := func(r int) error {
				err := coll.AllReduce(comms[r], bufs[r].Send, bufs[r].Recv, count, gccl.Int32, gccl.Sum, bufs[r].S)
				return errors.Join(err, bufs[r].Dev.Synchronize(bufs[r].S))
			}
			_, errs := gccltest.Parallel(n, func(r int) (struct{}, error) { return struct{}{}, launch(r) })
			for r := range n {
				require.NoError(t, errs[r], "warm-up on rank %d", r)
			}
			asyncs, errs := gccltest.Parallel(n, func(r int) (error, error) {
				if r == stalled {
					return nil, nil
				}
				time.Sleep(time.Duration(r) * stagger)
				err := launch(r)
				async := comms[r].AsyncError()
				_ = comms[r].Abort()
				return async, err
			})
			for r := range n {
				if r == stalled {
					continue
				}
				t.Logf("rank %d: %v", r, errs[r])
				require.ErrorIs(t, errs[r], gccl.ErrTimeout, "rank %d", r)
				assert.Equal(t, "rank 2", Blamed(errs[r]), "rank %d: %v", r, errs[r])
				require.ErrorIs(t, asyncs[r], gccl.ErrTimeout, "rank %d AsyncError", r)
				assert.Equal(t, "rank 2", Blamed(asyncs[r]), "rank %d AsyncError: %v", r, asyncs[r])
			}
		})
	}
}
