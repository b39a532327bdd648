package ucx

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain loads UCX and runs one context before the leak check's
// snapshot: libucs keeps process-wide descriptors (its async thread's
// event set) from its first use until the process exits, which are not
// leaks of any test.
func TestMain(m *testing.M) {
	if Load() == nil {
		if c, err := NewContext(Setting{"TLS", "tcp"}); err == nil {
			if w, err := c.NewWorker(); err == nil {
				w.Close()
			}
			c.Close()
		}
	}
	leakcheck.Main(m)
}

// requireUCX skips only when libucp.so.0 is genuinely absent.
func requireUCX(t *testing.T) {
	t.Helper()
	if err := Load(); err != nil {
		require.ErrorIs(t, err, ErrNoLibrary)
		t.Skipf("UCX is not installed here: %v", err)
	}
}

func tcpContext(t *testing.T) *Context {
	t.Helper()
	requireUCX(t)
	c, err := NewContext(Setting{"TLS", "tcp"})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newWorker is a worker of c, closed when the test ends (before c).
func newWorker(t *testing.T, c *Context) *Worker {
	t.Helper()
	w, err := c.NewWorker()
	require.NoError(t, err)
	t.Cleanup(w.Close)
	return w
}

func TestResourcesParse(t *testing.T) {
	info := "#\n# UCP context\n#\n#     component 1  :  tcp\n#            md 1  :  component 1  tcp \n" +
		"#      resource 0  :  md 0  dev 0  flags -- self/memory0\n" +
		"#      resource 1  :  md 1  dev 1  flags -- tcp/lo\n" +
		"#      resource 7  :  md 4  dev 5  flags -- rc_mlx5/mlx5_0:1\n#\n"
	assert.Equal(t, []Resource{{"self", "memory0"}, {"tcp", "lo"}, {"rc_mlx5", "mlx5_0:1"}}, ParseResources(info))
	assert.Empty(t, ParseResources("garbage\n#resource\n"))
}

func TestContextResources(t *testing.T) {
	c := tcpContext(t)
	res := c.Resources()
	require.NotEmpty(t, res)
	for _, r := range res {
		assert.Equal(t, "tcp", r.Transport, "UCX_TLS=tcp allows tcp only")
	}
	assert.NotEmpty(t, Version())
	t.Logf("UCX %s, resources %v, CUDA %v", Version(), res, c.CUDA())
}

func TestBadSetting(t *testing.T) {
	requireUCX(t)
	_, err := NewContext(Setting{"RNDV_THRESH", "not-a-size"})
	require.Error(t, err)
	assert.Equal(t, gccl.SystemError, gccl.Code(err))
	assert.Contains(t, err.Error(), "RNDV_THRESH")
}

// connected is a sending endpoint from a new worker a to a new worker b;
// the caller closes all three.
func connected(t *testing.T, c *Context) (a, b *Worker, ep *Endpoint) {
	t.Helper()
	a, err := c.NewWorker()
	require.NoError(t, err)
	b, err = c.NewWorker()
	require.NoError(t, err)
	addr, err := b.Address()
	require.NoError(t, err)
	ep, err = a.Connect(addr)
	require.NoError(t, err)
	return a, b, ep
}

// progressing runs w's progress in a goroutine, as a live peer does, until
// the returned function is called.
func progressing(w *Worker) (stop func()) {
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-quit:
				return
			default:
				_ = w.Wait(time.Millisecond)
			}
		}
	}()
	return func() { close(quit); <-stopped }
}

// pair is a sending endpoint from worker a to worker b (connected), which
// the test's cleanup closes with a flush, then the workers.
func pair(t *testing.T, c *Context) (a, b *Worker, ep *Endpoint) {
	t.Helper()
	a, b, ep = connected(t, c)
	t.Cleanup(func() {
		stop := progressing(b) // closing with a flush needs the peer's worker to progress
		start := time.Now()
		assert.NoError(t, ep.Close(false, 5*time.Second))
		t.Logf("flushing close took %v", time.Since(start))
		stop()
		a.Close()
		b.Close()
	})
	return a, b, ep
}

func ptr(p []byte) unsafe.Pointer {
	if len(p) == 0 {
		return nil
	}
	return unsafe.Pointer(&p[0])
}

// waitBoth tests both requests (progressing both workers) until done.
func waitBoth(t *testing.T, s, r *Request) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var sd, rd bool
	var n int
	for !(sd && rd) {
		require.True(t, time.Now().Before(deadline), "transfer not done in time")
		var err error
		if !sd {
			sd, _, err = s.Test()
			require.NoError(t, err)
		}
		if !rd {
			rd, n, err = r.Test()
			require.NoError(t, err)
		}
		runtime.Gosched()
	}
	return n
}

func TestTagSendRecv(t *testing.T) {
	c := tcpContext(t)
	_, b, ep := pair(t, c)
	for _, size := range []int{0, 1, 7, 1000003} {
		src := make([]byte, size)
		_, _ = rand.Read(src)
		dst := make([]byte, size+16)
		for i := range dst {
			dst[i] = 0xa5
		}
		var m *Mem
		if size > 0 {
			var err error
			m, err = c.Map(ptr(src), size, false)
			require.NoError(t, err)
		}
		r, err := b.Recv(ptr(dst), len(dst), uint64(size), nil, false)
		require.NoError(t, err)
		s, err := ep.Send(ptr(src), size, uint64(size), m, false)
		require.NoError(t, err)
		n := waitBoth(t, s, r)
		require.Equal(t, size, n)
		require.True(t, bytes.Equal(src, dst[:size]), "size %d: data differs", size)
		for i := size; i < len(dst); i++ {
			require.Equal(t, byte(0xa5), dst[i], "byte %d past the message written", i)
		}
		require.NoError(t, c.Unmap(m))
	}
}

func TestTruncatedReceive(t *testing.T) {
	c := tcpContext(t)
	_, b, ep := pair(t, c)
	src, dst := make([]byte, 100), make([]byte, 10)
	r, err := b.Recv(ptr(dst), len(dst), 5, nil, false)
	require.NoError(t, err)
	s, err := ep.Send(ptr(src), len(src), 5, nil, false)
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for {
		done, _, err := r.Test()
		_, _, _ = s.Test()
		if done {
			require.Error(t, err)
			assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "%v", err)
			return
		}
		require.True(t, time.Now().Before(deadline))
	}
}

func TestCancelAndWaitDeadline(t *testing.T) {
	c := tcpContext(t)
	w := newWorker(t, c)
	buf := make([]byte, 8)
	r, err := w.Recv(ptr(buf), len(buf), 1, nil, false)
	require.NoError(t, err)
	start := time.Now()
	err = r.Wait(150 * time.Millisecond)
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "%v", err)
	assert.Less(t, time.Since(start), 2*time.Second)
	r.Cancel()
	require.Error(t, r.Wait(5*time.Second), "a cancelled receive ends with an error")
	r.Release()
}

// TestIdleWaitSleeps: a Wait on an idle worker sleeps in poll instead of
// spinning: over 300ms of waiting it uses far less CPU time than that.
func TestIdleWaitSleeps(t *testing.T) {
	c := tcpContext(t)
	w := newWorker(t, c)
	before := cpuTime(t)
	start := time.Now()
	for time.Since(start) < 300*time.Millisecond {
		require.NoError(t, w.Wait(100*time.Millisecond))
	}
	used := cpuTime(t) - before
	assert.Less(t, used, 100*time.Millisecond, "an idle wait burned %v of CPU in 300ms", used)
}

func cpuTime(t *testing.T) time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	require.NoError(t, err)
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+2:])
	var ut, st int64
	for _, c := range f[11] {
		ut = ut*10 + int64(c-'0')
	}
	for _, c := range f[12] {
		st = st*10 + int64(c-'0')
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func TestReadBack(t *testing.T) {
	c := tcpContext(t)
	a, err := c.NewWorker()
	require.NoError(t, err)
	addr, err := a.Address()
	require.NoError(t, err)
	self, err := a.Connect(addr)
	require.NoError(t, err)
	defer func() { assert.NoError(t, self.Close(false, 5*time.Second)); a.Close() }()
	buf := []byte{42, 1, 2}
	m, err := c.Map(ptr(buf), len(buf), false)
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Unmap(m)) }()
	var dst [8]byte
	r, err := self.ReadBack(m, ptr(buf), unsafe.Pointer(&dst[0]))
	require.NoError(t, err)
	require.NoError(t, r.Wait(10*time.Second))
	assert.Equal(t, byte(42), dst[0])
}

func TestMapRejectsEmpty(t *testing.T) {
	c := tcpContext(t)
	_, err := c.Map(nil, 0, false)
	assert.Equal(t, gccl.InvalidArgument, gccl.Code(err))
}

// TestUnexpectedMessages: receives posted after their messages arrived
// (matched at once from UCX's unexpected queue) report their lengths.
func TestUnexpectedMessages(t *testing.T) {
	c := tcpContext(t)
	a, b, ep := pair(t, c)
	src := randBytes(t, 3000)
	sizes := []int{0, 1, 3, 3000}
	var sends []*Request
	for i, n := range sizes {
		r, err := ep.Send(ptr(src[:n]), n, uint64(100+i), nil, false)
		require.NoError(t, err)
		sends = append(sends, r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range sends {
		for done := false; !done; {
			b.Progress()
			var err error
			done, _, err = r.Test()
			require.NoError(t, err)
			require.True(t, time.Now().Before(deadline))
		}
	}
	for range 20 { // let the messages land in b's unexpected queue
		b.Progress()
		a.Progress()
		time.Sleep(time.Millisecond)
	}
	for i, n := range sizes {
		dst := make([]byte, n+5)
		r, err := b.Recv(ptr(dst), len(dst), uint64(100+i), nil, false)
		require.NoError(t, err)
		require.NoError(t, r.Wait(10*time.Second))
		_, got, _ := r.Test()
		assert.Equal(t, n, got, "message %d", i)
		assert.Equal(t, src[:n], dst[:n])
	}
}

func randBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// TestMissingLibrary: a library that is not there is a SystemError that
// names it and says what to do.
func TestMissingLibrary(t *testing.T) {
	err := loadFrom("libucp-gccl-test-missing.so.0")
	require.Error(t, err)
	assert.Equal(t, gccl.SystemError, gccl.Code(err))
	assert.ErrorIs(t, err, ErrNoLibrary)
	assert.Contains(t, err.Error(), "libucp-gccl-test-missing.so.0 was not found")
	assert.Contains(t, err.Error(), "GCCL_NET=socket")
}

// TestPeerStatuses: the statuses that say the peer went or cannot be
// reached are RemoteError (a closing sender whose receiver closed first
// gets UCS_ERR_NOT_CONNECTED from its endpoint's flush); others are not.
func TestPeerStatuses(t *testing.T) {
	for s, want := range map[Status]gccl.Result{
		errUnreachable: gccl.RemoteError, errNotConnected: gccl.RemoteError, errConnectionRset: gccl.RemoteError,
		errLinkFirst: gccl.RemoteError, errEndpointLast: gccl.RemoteError,
		ErrNoResource: gccl.SystemError, ErrMsgTruncated: gccl.InvalidUsage, OK: gccl.Success,
	} {
		assert.Equal(t, want, gccl.Code(check("call", s)), "status %d", int(s))
	}
}

func TestUnlessSet(t *testing.T) {
	s := Setting{"?RNDV_THRESH", "128k"}
	t.Setenv("UCX_RNDV_THRESH", "")
	os.Unsetenv("UCX_RNDV_THRESH")
	require.Equal(t, []Setting{s}, s.UnlessSet())
	t.Setenv("UCX_RNDV_THRESH", "1m")
	require.Empty(t, s.UnlessSet())
	os.Unsetenv("UCX_RNDV_THRESH")
	t.Setenv("UCX_RNDV_SCHEME", "")
	require.Empty(t, s.UnlessSet("?RNDV_SCHEME"), "a setting named in also is set")
}
