package fault

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/require"
)

// parallel runs f for every rank in its own goroutine and returns the results.
func parallel[T any](n int, f func(rank int) (T, error)) ([]T, []error) {
	out, errs := make([]T, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { out[r], errs[r] = f(r) })
	}
	wg.Wait()
	return out, errs
}

// makeComms creates an n-rank host communicator in this process with the
// given deadline. The caller owns the communicators (tests here tear them
// down themselves, since that is what they test); a cleanup aborts them.
func makeComms(t *testing.T, n int, timeout time.Duration) []*comm.Comm {
	t.Helper()
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	blocking := true
	cfg := &comm.Config{Backend: device.Host, Timeout: timeout, Blocking: &blocking, Name: t.Name()}
	comms, errs := parallel(n, func(r int) (*comm.Comm, error) { return comm.InitRankConfig(n, id, r, cfg) })
	t.Cleanup(func() {
		for _, c := range comms {
			_ = c.Abort()
		}
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return comms
}

// rankBufs is one rank's device buffers and stream for a test.
type rankBufs struct {
	dev        device.Device
	s          gccl.Stream
	send, recv uintptr
	n          int // bytes in each buffer
}

// newRankBufs allocates send and recv buffers of n bytes on c's device, the
// send buffer holding random int32 data, the recv buffer poisoned.
func newRankBufs(t *testing.T, c *comm.Comm, n int) *rankBufs {
	t.Helper()
	d := c.Device()
	require.NotNil(t, d)
	s, err := d.NewStream()
	require.NoError(t, err)
	b := &rankBufs{dev: d, s: s, n: n}
	b.send, err = d.Alloc(n)
	require.NoError(t, err)
	b.recv, err = d.Alloc(n)
	require.NoError(t, err)
	in := make([]byte, n)
	reduce.Fill(in, gccl.Int32, rand.New(rand.NewPCG(rand.Uint64(), uint64(c.Rank()))))
	require.NoError(t, d.CopyIn(b.send, in))
	poison := make([]byte, n)
	for i := range poison {
		poison[i] = 0xA5
	}
	require.NoError(t, d.CopyIn(b.recv, poison))
	return b
}

// free releases the buffers and the stream; errors are ignored because the
// stream may hold the sticky error of a failed operation.
func (b *rankBufs) free() {
	_ = b.dev.DestroyStream(b.s)
	_ = b.dev.Free(b.send)
	_ = b.dev.Free(b.recv)
}

// resources counts what a leak would leave behind: goroutines, open file
// descriptors and gccl's files in /dev/shm.
type resources struct {
	goroutines, fds, shm int
}

func (r resources) String() string {
	return fmt.Sprintf("goroutines=%d fds=%d shm=%d", r.goroutines, r.fds, r.shm)
}

func countResources(t *testing.T) resources {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	shm, err := os.ReadDir("/dev/shm")
	require.NoError(t, err)
	n, mine := 0, fmt.Sprintf("gccl-%d-", os.Getpid()) // other processes' files are not ours
	for _, e := range shm {
		if strings.HasPrefix(e.Name(), mine) {
			n++
		}
	}
	return resources{goroutines: runtime.NumGoroutine(), fds: len(fds), shm: n}
}

// settle waits (up to 5 s) until the resource counts are back to before,
// and fails the test with both counts if they are not.
func settle(t *testing.T, before resources) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var now resources
	for time.Now().Before(deadline) {
		now = countResources(t)
		if now.goroutines <= before.goroutines && now.fds <= before.fds && now.shm <= before.shm {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Fatalf("resources leaked: before %v, after %v\n%s", before, now, buf)
}
