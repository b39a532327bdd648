package badinput

import (
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peerTimeout is the deadline of the stalled-peer cases' worlds.
const peerTimeout = time.Second

// peerCase is a case of class peers on a fresh 2-rank world with a
// 1 s deadline and 64 KiB buffers per rank (send random, recv poisoned).
func peerCase(name, did string, code gccl.Result, arg string, words []string, then string, run func(t *testing.T, w *world, send, recv []uintptr) error) badCase {
	return badCase{name: name, class: peers, did: did, code: code, arg: arg, words: words, then: then,
		run: func(t *testing.T) error {
			w := newWorld(t, 2, peerTimeout)
			send, recv := make([]uintptr, 2), make([]uintptr, 2)
			for r := range 2 {
				send[r], recv[r] = w.alloc(t, r, 1<<16), w.alloc(t, r, 1<<16)
				fill(send[r], 1<<14, func(i int) int32 { return value(r, i) })
			}
			return run(t, w, send, recv)
		}}
}

// allReduce launches an AllReduce of 16 Ki int32 on rank r.
func allReduce(w *world, r int, send, recv []uintptr) error {
	return coll.AllReduce(w.comms[r], send[r], recv[r], 1<<14, gccl.Int32, gccl.Sum, w.streams[r])
}

// took asserts that what ran for less than limit.
func took(t *testing.T, start time.Time, limit time.Duration, what string) {
	t.Helper()
	assert.Less(t, time.Since(start), limit, what)
}

func peerCases() []badCase {
	return []badCase{
		peerCase("peer-aborts-mid-allreduce", "rank 1 aborts its communicator while rank 0 waits in an AllReduce",
			gccl.RemoteError, "", []string{"rank 1"}, "at once (well before the deadline), on Synchronize and AsyncError; rank 0's output untouched",
			func(t *testing.T, w *world, send, recv []uintptr) error {
				require.NoError(t, allReduce(w, 0, send, recv))
				time.Sleep(50 * time.Millisecond)
				start := time.Now()
				require.NoError(t, w.comms[1].Abort())
				err := w.sync(0)
				took(t, start, peerTimeout*9/10, "the survivor's wait")
				expect(t, gccl.RemoteError, "", []string{"rank 1"}, w.comms[0].AsyncError())
				untouched(t, recv[0], 1<<16, "rank 0's recvbuff")
				return err
			}),
		peerCase("peer-aborts-mid-recv", "rank 1 aborts while rank 0 waits in a Recv from it",
			gccl.RemoteError, "", []string{"rank 1"}, "at once",
			func(t *testing.T, w *world, send, recv []uintptr) error {
				require.NoError(t, p2p.Recv(w.comms[0], recv[0], 1<<14, gccl.Int32, 1, w.streams[0]))
				time.Sleep(50 * time.Millisecond)
				start := time.Now()
				require.NoError(t, w.comms[1].Abort())
				err := w.sync(0)
				took(t, start, peerTimeout*9/10, "the survivor's wait")
				return err
			}),
		peerCase("launch-after-peer-loss", "rank 0 launches an AllReduce after rank 1 aborted",
			gccl.RemoteError, "", []string{"rank 1"}, "at launch, naming the lost peer",
			func(t *testing.T, w *world, send, recv []uintptr) error {
				require.NoError(t, w.comms[1].Abort())
				require.Eventually(t, func() bool { return w.comms[0].AsyncError() != nil }, 5*time.Second, time.Millisecond)
				return allReduce(w, 0, send, recv)
			}),
		peerCase("peer-never-joins", "rank 0 launches an AllReduce that rank 1 (alive) never calls",
			gccl.TimeoutError, "", []string{"timed out after", "waiting for rank 1", "it has not arrived at op #0's zero-copy barrier"}, "after the 1 s deadline (not before), on Synchronize and AsyncError; Abort then returns at once",
			func(t *testing.T, w *world, send, recv []uintptr) error {
				start := time.Now()
				require.NoError(t, allReduce(w, 0, send, recv))
				err := w.sync(0)
				assert.GreaterOrEqual(t, time.Since(start), peerTimeout*9/10, "gave up early")
				took(t, start, 2*peerTimeout+time.Second, "the wait")
				expect(t, gccl.TimeoutError, "", nil, w.comms[0].AsyncError())
				start = time.Now()
				require.NoError(t, w.comms[0].Abort())
				took(t, start, time.Second, "Abort")
				return err
			}),
		peerCase("one-rank-bad-buffer", "rank 0 passes a 4 KiB buffer to an AllReduce of 64 KiB that rank 1 launched correctly",
			gccl.InvalidArgument, "recvbuff", []string{"recvbuff [", "runs 61440 bytes past its allocation of 4096 bytes"},
			"at once on rank 0, which launched nothing; rank 1 waits for it and gets `ErrTimeout` after the deadline (the communicator is then failed on rank 1: create a new one)",
			func(t *testing.T, w *world, send, recv []uintptr) error {
				small := w.alloc(t, 0, 4096)
				require.NoError(t, allReduce(w, 1, send, recv))
				err := coll.AllReduce(w.comms[0], send[0], small, 1<<14, gccl.Int32, gccl.Sum, w.streams[0])
				expect(t, gccl.TimeoutError, "", nil, w.sync(1))
				untouched(t, small, 4096, "rank 0's buffer")
				return err
			}),
		peerCase("close-with-work-in-flight", "rank 0 closes its communicator while an AllReduce rank 1 never joins is in flight",
			gccl.InvalidUsage, "comm", []string{"with operations in flight"}, "after waiting up to the deadline; the stream reports the operation's failure; Close again returns nil",
			func(t *testing.T, w *world, send, recv []uintptr) error {
				require.NoError(t, allReduce(w, 0, send, recv))
				start := time.Now()
				err := w.comms[0].Close()
				took(t, start, 2*peerTimeout+time.Second, "Close")
				require.Error(t, w.sync(0))
				require.NoError(t, w.comms[0].Close())
				return err
			}),
		peerCase("finalize-after-peer-abort", "rank 0 calls Finalize after rank 1 aborted",
			gccl.RemoteError, "", []string{"rank 1"}, "",
			func(t *testing.T, w *world, send, recv []uintptr) error {
				require.NoError(t, w.comms[1].Abort())
				require.Eventually(t, func() bool { return w.comms[0].AsyncError() != nil }, 5*time.Second, time.Millisecond)
				return w.comms[0].Finalize()
			}),
		peerCase("abort-while-blocked", "another goroutine aborts rank 0 while it waits in an AllReduce rank 1 never joins",
			gccl.RemoteError, "", []string{"aborted"}, "the blocked Synchronize ends at once; Abort returns in well under 1 s",
			func(t *testing.T, w *world, send, recv []uintptr) error {
				require.NoError(t, allReduce(w, 0, send, recv))
				done := make(chan error, 1)
				go func() { done <- w.sync(0) }()
				time.Sleep(50 * time.Millisecond)
				start := time.Now()
				require.NoError(t, w.comms[0].Abort())
				took(t, start, time.Second, "Abort")
				select {
				case err := <-done:
					return err
				case <-time.After(peerTimeout / 2):
					t.Fatal("Synchronize still blocked after Abort")
				}
				return nil
			}),
	}
}
