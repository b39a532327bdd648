package ucx

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/internal/ucx"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDevices(t *testing.T) {
	requireUCX(t)
	devs, err := New().Devices()
	require.NoError(t, err)
	require.NotEmpty(t, devs)
	c, err := ucx.NewContext()
	require.NoError(t, err)
	cuda := c.CUDA()
	c.Close()
	for i, d := range devs {
		if os.Getenv("UCX_TLS") == "tcp" {
			assert.Equal(t, "tcp", d.Transport, "UCX_TLS=tcp")
		}
		assert.Equal(t, cuda, d.Memory&network.MemCUDA != 0, "MemCUDA exactly when UCX reports CUDA memory")
		assert.NotZero(t, d.Memory&network.MemHost)
		assert.Equal(t, 1, d.MaxRecvs)
		assert.Equal(t, InFlight, d.InFlight)
		if d.Name == "lo" {
			assert.Equal(t, len(devs)-1, i, "loopback comes last")
		}
	}
	t.Logf("UCX %s devices: %+v", ucx.Version(), devs)
}

// TestGroup: verbs transports make an IB device, listed first, with its
// rate; GCCL_IB_DISABLE leaves it out; shared memory is no device.
func TestGroup(t *testing.T) {
	root := t.TempDir()
	write := func(path, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, path), []byte(s), 0o644))
	}
	write("sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n")
	write("sys/class/net/eth0/speed", "25000\n")
	write("sys/class/net/eth1/speed", "100000\n")
	res := ucx.ParseResources(`#      resource 0  :  md 0  dev 0  flags -- posix/memory
#      resource 1  :  md 1  dev 1  flags -- tcp/lo
#      resource 2  :  md 1  dev 2  flags -- tcp/eth0
#      resource 3  :  md 2  dev 3  flags -- rc_mlx5/mlx5_0:1
#      resource 4  :  md 2  dev 3  flags -- dc_mlx5/mlx5_0:1
#      resource 5  :  md 1  dev 4  flags -- tcp/eth1
#      resource 6  :  md 3  dev 5  flags -- cuda_copy/cuda`)
	p := &Provider{sysRoot: root}
	devs := p.group(res, true, false)
	names := []string{}
	for _, d := range devs {
		names = append(names, d.props.Name)
	}
	assert.Equal(t, []string{"mlx5_0:1", "eth1", "eth0", "lo"}, names)
	assert.Equal(t, "rc_mlx5,dc_mlx5", devs[0].props.Transport)
	assert.Equal(t, 200000, devs[0].props.Speed)
	assert.Equal(t, 100000, devs[1].props.Speed)
	assert.Equal(t, network.MemHost|network.MemCUDA, devs[0].props.Memory)
	devs = p.group(res, false, true)
	require.Len(t, devs, 3)
	for _, d := range devs {
		assert.Equal(t, "tcp", d.props.Transport, "GCCL_IB_DISABLE leaves no verbs transport")
		assert.Equal(t, network.MemHost, d.props.Memory)
	}
}

// TestIBDisable: with GCCL_IB_DISABLE=1 the provider still runs (over
// TCP) and its device contexts hold no verbs transport.
func TestIBDisable(t *testing.T) {
	requireUCX(t)
	t.Setenv("GCCL_IB_DISABLE", "1")
	env.Reload()
	t.Cleanup(func() { env.Reload() })
	require.True(t, env.Get().IBDisable)
	p := New()
	s, r := pair(t, p, 0)
	sb, rb := newBuffer(t, s, 64), newBuffer(t, r, 64)
	copy(sb.b, randBytes(3, 64))
	rr, err := r.Irecv(rb.region(64), rb.m, 1)
	require.NoError(t, err)
	sr, err := s.Isend(sb.region(64), sb.m, 1)
	require.NoError(t, err)
	_, err = finish(t, sr, rr)
	require.NoError(t, err)
	assert.Equal(t, sb.b, rb.b)
	for _, res := range p.ctxs[0].ctx.Resources() {
		assert.False(t, IBTransport(res.Transport), "%v", res)
	}
}

func TestHandle(t *testing.T) {
	requireUCX(t)
	lc, _ := configs()
	l, err := New().Listen(0, lc)
	require.NoError(t, err)
	defer l.Close()
	h := l.Handle()
	assert.LessOrEqual(t, len(h), network.MaxHandleSize)
	_, err = decodeHandle(h)
	require.NoError(t, err)
	for _, bad := range []network.Handle{nil, []byte("GCUX"), append([]byte("GCUX\x02"), h[5:]...), []byte("XXXX\x01abc"), make([]byte, 200)} {
		_, err := New().Connect(context.Background(), 0, bad, lc, 0)
		assert.Equal(t, gccl.InvalidArgument, gccl.Code(err), "handle %q: %v", bad, err)
	}
}

// TestTransfers: every size, random data, every byte checked, bytes past
// the message untouched; over TCP and, where UCX has them, shared memory.
func TestTransfers(t *testing.T) {
	requireUCX(t)
	for _, tls := range []string{"tcp", "tcp,shm,self"} {
		t.Run(tls, func(t *testing.T) {
			t.Setenv("UCX_TLS", tls)
			s, r := pair(t, New(), 3)
			for i, size := range []int{0, 1, 7, 1000003} {
				want := randBytes(uint64(i+1), size)
				sb, rb := newBuffer(t, s, size+1), newBuffer(t, r, size+16)
				copy(sb.b, want)
				for j := range rb.b {
					rb.b[j] = 0x5a
				}
				rr, err := r.Irecv(rb.region(size+16), rb.m, uint32(100+i))
				require.NoError(t, err)
				sr, err := s.Isend(sb.region(size), sb.m, uint32(100+i))
				require.NoError(t, err)
				n, err := finish(t, sr, rr)
				require.NoError(t, err)
				require.Equal(t, size, n[1], "bytes received")
				require.True(t, bytes.Equal(want, rb.b[:size]), "size %d: data differs", size)
				for j := size; j < len(rb.b); j++ {
					require.Equal(t, byte(0x5a), rb.b[j], "size %d: byte %d past the message written", size, j)
				}
			}
		})
	}
}

// TestManyInFlight: InFlight sends and receives posted at once, receives
// posted in reverse tag order, and two messages per tag arriving in order.
func TestManyInFlight(t *testing.T) {
	requireUCX(t)
	s, r := pair(t, New(), 0)
	const n, size = InFlight, 4099
	sb, rb := newBuffer(t, s, n*size), newBuffer(t, r, n*size)
	copy(sb.b, randBytes(42, n*size))
	var reqs []network.Request
	for i := n - 1; i >= 0; i-- {
		rr, err := r.Irecv(rb.region(n*size).Slice(i*size, size), rb.m, uint32(i/2))
		require.NoError(t, err)
		require.NotNil(t, rr)
		reqs = append(reqs, rr)
	}
	extra, err := r.Irecv(rb.region(size), rb.m, 9999)
	require.NoError(t, err)
	assert.Nil(t, extra, "more than InFlight receives: retry later")
	for i := 0; i < n; i++ {
		// Messages 2k and 2k+1 share tag k: the first sent must fill the
		// receive posted first, which is slot 2k+1 (posted in reverse).
		j := i ^ 1
		sr, err := s.Isend(sb.region(n*size).Slice(j*size, size), sb.m, uint32(i/2))
		require.NoError(t, err)
		require.NotNil(t, sr)
		reqs = append(reqs, sr)
	}
	_, err = finish(t, reqs...)
	require.NoError(t, err)
	require.True(t, bytes.Equal(sb.b, rb.b), "data differs")
}

func TestWrongIdentity(t *testing.T) {
	requireUCX(t)
	p := New()
	l, cc := listen(t, p)
	wrongSecret, wrongComm := cc, cc
	wrongSecret.Secret[15] ^= 1
	wrongComm.CommID[3] ^= 1
	for name, cfg := range map[string]network.Config{"secret": wrongSecret, "comm": wrongComm} {
		_, err := p.Connect(testCtx(t), 0, l.Handle(), cfg, 0)
		require.Error(t, err, "wrong %s accepted", name)
		assert.Equal(t, gccl.RemoteError, gccl.Code(err), "wrong %s: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := l.Accept(ctx, network.Peer{Rank: 1})
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "nothing unauthenticated arrived: %v", err)
}

func TestReject(t *testing.T) {
	requireUCX(t)
	p := New()
	l, cc := listen(t, p)
	l.Reject(network.Peer{Rank: 1, Channel: 5})
	_, err := p.Connect(testCtx(t), 0, l.Handle(), cc, 5)
	assert.Equal(t, gccl.RemoteError, gccl.Code(err), "%v", err)
	// Rejected after it arrived: the sender's requests fail.
	s, err := p.Connect(testCtx(t), 0, l.Handle(), cc, 6)
	require.NoError(t, err)
	defer s.Close()
	require.Eventually(t, func() bool {
		l.(*listener).mu.Lock()
		defer l.(*listener).mu.Unlock()
		return l.(*listener).arrived[network.Peer{Rank: 1, Channel: 6}] != nil
	}, 5*time.Second, time.Millisecond)
	l.Reject(network.Peer{Rank: 1, Channel: 6})
	err = sendUntilError(t, s)
	assert.True(t, errors.Is(err, gccl.ErrRemote), "%v", err)
}

// sendUntilError sends 1 MiB messages until one fails.
func sendUntilError(t *testing.T, s network.SendComm) error {
	b := newBuffer(t, s, 1<<20)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r, err := s.Isend(b.region(1<<20), b.m, 1)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		if _, err := finish(t, r); err != nil {
			return err
		}
	}
	return nil
}

func TestSenderCloses(t *testing.T) {
	requireUCX(t)
	p := New()
	l, cc := listen(t, p)
	s, r := connect(t, p, l, cc, 0)
	defer r.Close()
	sb := newBuffer(t, s, 100)
	copy(sb.b, randBytes(5, 100))
	var sent []network.Request
	for i := range 2 {
		sr, err := s.Isend(sb.region(100), sb.m, uint32(i))
		require.NoError(t, err)
		sent = append(sent, sr)
	}
	_, err := finish(t, sent...)
	require.NoError(t, err)
	// Deregistration is the sender's before it closes.
	require.NoError(t, s.Close())
	rb := newBuffer(t, r, 100)
	for i := range 2 {
		rr, err := r.Irecv(rb.region(100), rb.m, uint32(i))
		require.NoError(t, err)
		_, err = finish(t, rr)
		require.NoError(t, err, "a message sent before the close arrives")
		require.Equal(t, sb.b, rb.b)
	}
	rr, err := r.Irecv(rb.region(100), rb.m, 2)
	require.NoError(t, err)
	_, err = finish(t, rr)
	assert.True(t, errors.Is(err, gccl.ErrRemote), "%v", err)
}

func TestReceiverCloses(t *testing.T) {
	requireUCX(t)
	p := New()
	l, cc := listen(t, p)
	s, r := connect(t, p, l, cc, 0)
	defer s.Close()
	require.NoError(t, r.Close())
	err := sendUntilError(t, s)
	assert.True(t, errors.Is(err, gccl.ErrRemote), "%v", err)
}

func TestDeadlines(t *testing.T) {
	requireUCX(t)
	p := New()
	l, cc := listen(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.Accept(ctx, network.Peer{Rank: 1})
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "%v", err)
	// A config timeout bounds an Accept whose context has none.
	lc, _ := configs()
	lc.Timeout = 100 * time.Millisecond
	l2, err := p.Listen(0, lc)
	require.NoError(t, err)
	defer l2.Close()
	_, err = l2.Accept(context.Background(), network.Peer{Rank: 1})
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "%v", err)

	// A listener that never answers: Connect gives up with its context.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	go func() {
		c, err := silent.Accept()
		if err == nil {
			time.Sleep(time.Second)
			c.Close()
		}
	}()
	h := encodeHandle(silent.Addr().(*net.TCPAddr).AddrPort())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err = p.Connect(ctx2, 0, h, cc, 0)
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "%v", err)
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestBadRegions(t *testing.T) {
	requireUCX(t)
	s, r := pair(t, New(), 0)
	sb, rb := newBuffer(t, s, 64), newBuffer(t, r, 64)
	other := make([]byte, 64)
	_, err := s.Isend(network.HostRegion(other), sb.m, 1)
	assert.Equal(t, gccl.InvalidArgument, gccl.Code(err), "a region outside the registration: %v", err)
	_, err = r.Irecv(rb.region(64), sb.m, 1)
	assert.Equal(t, gccl.InvalidArgument, gccl.Code(err), "another connection's registration: %v", err)
	_, err = s.Register(network.Region{Ptr: sb.region(1).Ptr, Len: 1, Kind: network.MemCUDA})
	assert.Equal(t, gccl.InvalidArgument, gccl.Code(err), "CUDA memory where UCX has no CUDA support: %v", err)
	assert.Equal(t, gccl.InvalidArgument, gccl.Code(s.Deregister(rb.m)))
}

// TestTruncation: a message larger than the receive is an error, not
// bytes written past the buffer.
func TestTruncation(t *testing.T) {
	requireUCX(t)
	s, r := pair(t, New(), 0)
	sb, rb := newBuffer(t, s, 1000), newBuffer(t, r, 1000)
	rr, err := r.Irecv(rb.region(10), rb.m, 1)
	require.NoError(t, err)
	sr, err := s.Isend(sb.region(1000), sb.m, 1)
	require.NoError(t, err)
	_, err = finish(t, rr, sr)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "%v", err)
}

// TestFlush: host regions need no flush; the GPUDirect read-back runs on
// host memory when forced.
func TestFlush(t *testing.T) {
	requireUCX(t)
	p := New()
	s, r := pair(t, p, 0)
	_ = s
	rb := newBuffer(t, r, 64)
	req, err := r.Flush(rb.region(64), rb.m)
	require.NoError(t, err)
	done, _, err := req.Test()
	assert.True(t, done)
	require.NoError(t, err)
	p.flushHost = true
	req, err = r.Flush(rb.region(64), rb.m)
	require.NoError(t, err)
	_, err = finish(t, req)
	require.NoError(t, err)
}

func TestClosedUse(t *testing.T) {
	requireUCX(t)
	p := New()
	l, cc := listen(t, p)
	s, r := connect(t, p, l, cc, 0)
	rb := newBufferNoCleanup(t, r, 8)
	pending, err := r.Irecv(rb.region(8), rb.m, 1)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "Close twice")
	_, _, err = pending.Test()
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "a request of a closed connection: %v", err)
	_, err = r.Irecv(rb.region(8), rb.m, 1)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err))
	require.NoError(t, s.Close())
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close twice")
	_, err = l.Accept(testCtx(t), network.Peer{Rank: 1})
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err))
}

func newBufferNoCleanup(t *testing.T, c network.Comm, n int) buffer {
	b := make([]byte, n)
	m, err := c.Register(network.HostRegion(b))
	require.NoError(t, err)
	return buffer{b, m}
}

// TestSenderDies: the sender's side socket and worker vanish without a
// bye (a killed process): a pending receive fails with ErrRemote.
func TestSenderDies(t *testing.T) {
	requireUCX(t)
	p := New()
	l, cc := listen(t, p)
	s, r := connect(t, p, l, cc, 0)
	defer r.Close()
	rb := newBuffer(t, r, 10)
	q, err := r.Irecv(rb.region(10), rb.m, 1)
	require.NoError(t, err)
	sc := s.(*sendComm)
	sc.oob.Close() // as the kernel does for a dead process
	_, err = finish(t, q)
	assert.True(t, errors.Is(err, gccl.ErrRemote), "%v", err)
	sc.peerGone.Store(true)
	require.NoError(t, s.Close())
}

// TestFail: the receiver's refusal reaches the sender with its code and
// message: pending and later sends fail with it, and Refusal reports it.
func TestFail(t *testing.T) {
	requireUCX(t)
	s, r := pair(t, New(), 0)
	sb := newBuffer(t, s, 1<<20)
	pending, err := s.Isend(sb.region(1<<20), sb.m, 7) // rendezvous: waits for a receive that never comes
	require.NoError(t, err)
	r.(network.Failer).Fail(gccl.Errorf(gccl.InvalidUsage, "op", "descriptor mismatch at step 3"))
	_, err = finish(t, pending)
	require.Error(t, err)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "%v", err)
	assert.Contains(t, err.Error(), "descriptor mismatch at step 3")
	_, err = s.Isend(sb.region(10), sb.m, 8)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err))
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(s.(network.Refuser).Refusal()))
}

// silence makes c's control socket deaf, as towards a peer behind a cut
// link: its watcher stops reading (and so never answers a bye or a
// closing), while the socket stays open (so the peer sees no end).
func silence(t *testing.T, c *conn) {
	t.Helper()
	require.NoError(t, c.oob.SetReadDeadline(time.Unix(1, 0)))
	select {
	case <-c.watcher:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not stop")
	}
}

// TestAbortSilentPeer: with a peer that answers nothing, an orderly Close
// would wait closeLinger for its acknowledgement; Abort ends either side
// at once (network.Aborter), and an Abort during such a Close cuts it
// short.
func TestAbortSilentPeer(t *testing.T) {
	requireUCX(t)
	for _, side := range []string{"sender", "receiver", "close then abort"} {
		t.Run(side, func(t *testing.T) {
			p := New()
			l, cc := listen(t, p)
			s, r := connect(t, p, l, cc, 0)
			end, peer := network.Comm(s), network.Comm(r)
			if side == "receiver" {
				end, peer = r, s
				silence(t, s.(*sendComm).conn)
			} else {
				silence(t, r.(*recvComm).conn)
			}
			start := time.Now()
			if side == "close then abort" {
				closed := make(chan error, 1)
				go func() { closed <- s.Close() }()
				time.Sleep(100 * time.Millisecond)
				require.NoError(t, network.Abort(s))
				require.NoError(t, <-closed)
			} else {
				require.NoError(t, network.Abort(end))
			}
			assert.Less(t, time.Since(start), time.Second, "Abort with a silent peer")
			require.NoError(t, network.Abort(peer))
		})
	}
}

// TestWaitSpinKeepsDeadline: a Wait polling for a long spin time still
// ends at its context's deadline (ErrTimeout), the request left pending.
func TestWaitSpinKeepsDeadline(t *testing.T) {
	requireUCX(t)
	defer futex.SetSpin(futex.SpinTime())
	futex.SetSpin(time.Hour)
	_, r := pair(t, New(), 0)
	b := newBuffer(t, r, 8)
	q, err := r.Irecv(b.region(8), b.m, 1)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = q.(network.Waiter).Wait(ctx)
	require.ErrorIs(t, err, gccl.ErrTimeout)
	require.Less(t, time.Since(start), 5*time.Second)
	done, _, err := q.Test()
	require.NoError(t, err)
	require.False(t, done, "the request stays pending")
}

// TestDeviceSettings: a TCP device's context sends eagerly below
// tcpEagerLimit, in pieces of tcpSegment, unless the environment says
// otherwise (the segment also where it sets the TX segment, which UCX
// wants no larger); a verbs device's keeps UCX's own.
func TestDeviceSettings(t *testing.T) {
	tcp := device{props: network.Properties{Name: "eth0"}}
	ib := device{props: network.Properties{Name: "mlx5_0:1"}, ib: true}
	eager := ucx.Setting{Name: "RNDV_THRESH", Value: tcpEagerLimit}
	segment := ucx.Setting{Name: "?RX_SEG_SIZE", Value: tcpSegment}
	require.Contains(t, deviceSettings(tcp), eager)
	require.Contains(t, deviceSettings(tcp), segment)
	require.Contains(t, deviceSettings(tcp), ucx.Setting{Name: "NET_DEVICES", Value: "eth0"})
	require.NotContains(t, deviceSettings(ib), eager)
	require.NotContains(t, deviceSettings(ib), segment)
	t.Setenv("UCX_RNDV_THRESH", "256k")
	require.NotContains(t, deviceSettings(tcp), eager, "the environment's UCX_RNDV_THRESH wins")
	require.Contains(t, deviceSettings(tcp), segment)
	t.Setenv("UCX_TCP_RX_SEG_SIZE", "128k")
	require.NotContains(t, deviceSettings(tcp), segment, "the environment's UCX_TCP_RX_SEG_SIZE wins")
	os.Unsetenv("UCX_TCP_RX_SEG_SIZE")
	t.Setenv("UCX_TCP_TX_SEG_SIZE", "2m")
	require.NotContains(t, deviceSettings(tcp), segment, "a TX segment of the environment's may exceed ours")
}

// TestDeviceSettingsReachUCX: UCX takes every setting of a TCP device's
// context (a transport setting under a name its transport does not know
// is dropped with a warning when the worker is made: "invalid
// configuration"). A child process makes the worker
// (TestDeviceSettingsChild) with UCX's log on its standard error, which
// C does not buffer (on standard output, the default, the warning would
// be lost when Go exits).
func TestDeviceSettingsReachUCX(t *testing.T) {
	requireUCX(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeviceSettingsChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "GCCL_UCX_SETTINGS_CHILD=1", "UCX_LOG_FILE=stderr")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestDeviceSettingsChild")
	require.NotContains(t, string(out), "invalid configuration")
}

// TestDeviceSettingsChild makes a worker of the first TCP device's
// context (for TestDeviceSettingsReachUCX).
func TestDeviceSettingsChild(t *testing.T) {
	if os.Getenv("GCCL_UCX_SETTINGS_CHILD") == "" {
		t.Skip("run by TestDeviceSettingsReachUCX")
	}
	p := New()
	devs, err := p.devices()
	require.NoError(t, err)
	i := slices.IndexFunc(devs, func(d device) bool { return !d.ib })
	require.GreaterOrEqual(t, i, 0, "no TCP device")
	require.Contains(t, deviceSettings(devs[i]), ucx.Setting{Name: "?RX_SEG_SIZE", Value: tcpSegment})
	dc, err := p.acquire(i)
	require.NoError(t, err)
	w, err := dc.ctx.NewWorker()
	require.NoError(t, err)
	w.Close()
	p.release(dc)
}
