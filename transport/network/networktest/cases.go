package networktest

import (
	"context"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// sizes of the transfers, the awkward ones: empty, one byte, odd, large and prime.
var sizes = []int{0, 1, 7, 1000003}

func testDevices(t *testing.T, p network.Provider) {
	require.NotEmpty(t, p.Name())
	devs, err := p.Devices()
	require.NoError(t, err)
	require.NotEmpty(t, devs)
	for i, d := range devs {
		require.NotEmpty(t, d.Name, "device %d", i)
		require.NotZero(t, d.Memory&network.MemHost, "device %d (%s) must register host memory", i, d.Name)
		require.GreaterOrEqual(t, d.InFlight, 1, "device %d (%s)", i, d.Name)
		require.GreaterOrEqual(t, d.MaxRecvs, 1, "device %d (%s)", i, d.Name)
		require.GreaterOrEqual(t, d.Speed, 0, "device %d (%s)", i, d.Name)
		require.NotEmpty(t, d.Transport, "device %d (%s)", i, d.Name)
	}
	_, err = p.Listen(len(devs), network.Config{})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument, "a device out of range")
}

// transfer sends data from s to r with tag, through a receive extra bytes
// larger, and checks every byte.
func transfer(t *testing.T, s network.SendComm, r network.RecvComm, data []byte, tag uint32, extra int) {
	t.Helper()
	sb, rb := newBuffer(t, s, len(data)), newBuffer(t, r, len(data)+extra)
	copy(sb.b, data)
	for i := range rb.b {
		rb.b[i] = 0xa5
	}
	rq := post(t, func() (network.Request, error) { return r.Irecv(rb.region(len(rb.b)), rb.m, tag) })
	sq := post(t, func() (network.Request, error) { return s.Isend(sb.region(len(data)), sb.m, tag) })
	_, err := finish(ctx(t), sq)
	require.NoError(t, err)
	n, err := finish(ctx(t), rq)
	require.NoError(t, err)
	require.Equal(t, len(data), n, "bytes received")
	requireBytes(t, data, rb.b[:n], "transfer")
	for i := n; i < len(rb.b); i++ {
		require.Equal(t, byte(0xa5), rb.b[i], "byte %d past the transfer was written", i)
	}
}

func testAnyOrder(t *testing.T, p network.Provider) {
	s, r := pair(t, p, 0) // connect, then accept
	transfer(t, s, r, randBytes(1, 1000), 1, 0)

	// accept first, then connect; and two channels in the other order
	lcfg, ccfg := configs()
	ln := listen(t, p, lcfg)
	type accepted struct {
		r   network.RecvComm
		err error
	}
	got := make(chan accepted, 2)
	go func() {
		for ch := range 2 {
			r, err := ln.Accept(ctx(t), network.Peer{Rank: connectRank, Channel: ch})
			got <- accepted{r, err}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	var sends [2]network.SendComm
	for _, ch := range []int{1, 0} {
		s, err := p.Connect(ctx(t), 0, ln.Handle(), ccfg, ch)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		sends[ch] = s
	}
	for ch := range 2 {
		a := <-got
		require.NoError(t, a.err)
		t.Cleanup(func() { a.r.Close() })
		transfer(t, sends[ch], a.r, randBytes(uint64(10+ch), 300+ch), uint32(ch), 0)
	}
}

func testTransfers(t *testing.T, p network.Provider) {
	s, r := pair(t, p, 3)
	for i, n := range sizes {
		transfer(t, s, r, randBytes(uint64(i), n), uint32(i), 16)
	}
	// the same, every send posted before any receive
	var datas [][]byte
	var reqs []network.Request
	for i, n := range sizes {
		d := randBytes(uint64(100+i), n)
		sb := newBuffer(t, s, n)
		copy(sb.b, d)
		datas = append(datas, d)
		reqs = append(reqs, post(t, func() (network.Request, error) { return s.Isend(sb.region(n), sb.m, uint32(100+i)) }))
	}
	var recvs []network.Request
	var bufs []buffer
	for i, n := range sizes {
		rb := newBuffer(t, r, n)
		bufs = append(bufs, rb)
		recvs = append(recvs, post(t, func() (network.Request, error) { return r.Irecv(rb.region(n), rb.m, uint32(100+i)) }))
	}
	for i := range sizes {
		_, err := finish(ctx(t), reqs[i])
		require.NoError(t, err, "send %d", i)
		n, err := finish(ctx(t), recvs[i])
		require.NoError(t, err, "receive %d", i)
		require.Equal(t, len(datas[i]), n)
		requireBytes(t, datas[i], bufs[i].b[:n], "transfer posted ahead")
	}
}

func testInFlight(t *testing.T, p network.Provider) {
	devs, err := p.Devices()
	require.NoError(t, err)
	count := min(devs[0].InFlight, 32)
	s, r := pair(t, p, 0)
	var sends, recvs []network.Request
	var datas [][]byte
	var bufs []buffer
	for i := range count {
		n := (i * 40009) % 300007
		d := randBytes(uint64(1000+i), n)
		sb := newBuffer(t, s, n)
		copy(sb.b, d)
		q, err := s.Isend(sb.region(n), sb.m, uint32(i))
		require.NoError(t, err)
		require.NotNil(t, q, "send %d of %d in flight refused (the device allows %d)", i, count, devs[0].InFlight)
		sends, datas = append(sends, q), append(datas, d)
	}
	for i := range count {
		rb := newBuffer(t, r, len(datas[i]))
		q, err := r.Irecv(rb.region(len(rb.b)), rb.m, uint32(i))
		require.NoError(t, err)
		require.NotNil(t, q, "receive %d of %d in flight refused", i, count)
		recvs, bufs = append(recvs, q), append(bufs, rb)
	}
	for i := count - 1; i >= 0; i-- { // in any order
		n, err := finish(ctx(t), recvs[i])
		require.NoError(t, err, "receive %d", i)
		require.Equal(t, len(datas[i]), n)
		requireBytes(t, datas[i], bufs[i].b, "request in flight")
		_, err = finish(ctx(t), sends[i])
		require.NoError(t, err, "send %d", i)
	}
}

func testWrongIdentity(t *testing.T, p network.Provider) {
	for _, which := range []string{"secret", "communicator id"} {
		lcfg, ccfg := configs()
		if which == "secret" {
			ccfg.Secret[0] ^= 1
		} else {
			ccfg.CommID[15] ^= 1
		}
		ln := listen(t, p, lcfg)
		s, err := p.Connect(ctx(t), 0, ln.Handle(), ccfg, 0)
		if err == nil {
			t.Cleanup(func() { s.Close() })
			err = sendUntilError(t, s)
		}
		requireGcclError(t, err, "a connection with the wrong "+which)
		c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err = ln.Accept(c, network.Peer{Rank: connectRank, Channel: 0})
		cancel()
		require.ErrorIs(t, err, gccl.ErrTimeout, "a connection with the wrong %s was accepted", which)
	}
}

// sendUntilError sends until a send fails, and returns its error (or
// fails the test after Timeout).
func sendUntilError(t *testing.T, s network.SendComm) error {
	t.Helper()
	sb := newBuffer(t, s, 1000)
	deadline := time.Now().Add(Timeout)
	for time.Now().Before(deadline) {
		q, err := s.Isend(sb.region(1000), sb.m, 0)
		if err != nil {
			return err
		}
		if q == nil {
			time.Sleep(time.Millisecond)
			continue
		}
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = finish(c, q)
		cancel()
		if err != nil && gccl.Code(err) != gccl.TimeoutError {
			return err
		}
	}
	t.Fatalf("sends did not fail within %v", Timeout)
	return nil
}

func testReject(t *testing.T, p network.Provider) {
	lcfg, ccfg := configs()
	ln := listen(t, p, lcfg)
	ln.Reject(network.Peer{Rank: connectRank, Channel: 0}) // before it connects
	s, err := p.Connect(ctx(t), 0, ln.Handle(), ccfg, 0)
	if err == nil {
		t.Cleanup(func() { s.Close() })
		err = sendUntilError(t, s)
	}
	require.ErrorIs(t, err, gccl.ErrRemote, "sends to a rejecting listener")

	s2, err := p.Connect(ctx(t), 0, ln.Handle(), ccfg, 1) // connected, then rejected
	require.NoError(t, err)
	t.Cleanup(func() { s2.Close() })
	time.Sleep(50 * time.Millisecond)
	ln.Reject(network.Peer{Rank: connectRank, Channel: 1})
	require.ErrorIs(t, sendUntilError(t, s2), gccl.ErrRemote, "sends on a connection rejected after it arrived")
}

func testPeerClose(t *testing.T, p network.Provider) {
	s, r := pair(t, p, 0)
	transfer(t, s, r, randBytes(5, 100), 0, 0)
	require.NoError(t, r.Close())
	require.ErrorIs(t, sendUntilError(t, s), gccl.ErrRemote, "sends after the receiver closed")

	s2, r2 := pair(t, p, 1)
	rb := newBuffer(t, r2, 100)
	q := post(t, func() (network.Request, error) { return r2.Irecv(rb.region(100), rb.m, 0) })
	require.NoError(t, s2.Close())
	_, err := finish(ctx(t), q)
	require.ErrorIs(t, err, gccl.ErrRemote, "a receive after the sender closed")
}

// testSendThenClose: what a sender's Isend completed reaches the receiver
// even when the sender closes right after, as TCP delivers what was
// written before the FIN: large transfers whose receives were posted,
// still arriving when the sender closes, and small ones whose receives are
// posted only after it closed. Only a receive past them fails.
func testSendThenClose(t *testing.T, p network.Provider) {
	large := sizes[len(sizes)-1]
	for ch, c := range []struct {
		sizes []int
		early bool // receives posted before the sends (as a rendezvous needs)
	}{
		{[]int{large, large + 1, large - 1}, true},
		{[]int{1, 0, 7, 1000, 33}, false},
	} {
		s, r := pair(t, p, ch)
		var datas [][]byte
		var sends, recvs []network.Request
		var bufs []buffer
		for i, n := range c.sizes {
			rb := newBuffer(t, r, n)
			datas, bufs = append(datas, randBytes(uint64(200+i), n)), append(bufs, rb)
			if c.early {
				recvs = append(recvs, post(t, func() (network.Request, error) { return r.Irecv(rb.region(n), rb.m, uint32(i)) }))
			}
		}
		for i, n := range c.sizes {
			sb := newBuffer(t, s, n)
			copy(sb.b, datas[i])
			sends = append(sends, post(t, func() (network.Request, error) { return s.Isend(sb.region(n), sb.m, uint32(i)) }))
		}
		for i, q := range sends {
			_, err := finish(ctx(t), q)
			require.NoError(t, err, "send %d", i)
		}
		require.NoError(t, s.Close())
		if !c.early {
			time.Sleep(20 * time.Millisecond) // the receiving end sees the close first
			for i, rb := range bufs {
				recvs = append(recvs, post(t, func() (network.Request, error) { return r.Irecv(rb.region(len(rb.b)), rb.m, uint32(i)) }))
			}
		}
		for i, q := range recvs {
			n, err := finish(ctx(t), q)
			require.NoError(t, err, "receive %d of a send completed before the sender closed", i)
			require.Equal(t, len(datas[i]), n, "receive %d", i)
			requireBytes(t, datas[i], bufs[i].b[:n], "a transfer sent before the sender closed")
		}
		rb := newBuffer(t, r, 10)
		q, err := r.Irecv(rb.region(10), rb.m, uint32(len(datas)))
		if err == nil && q != nil {
			_, err = finish(ctx(t), q)
		}
		require.ErrorIs(t, err, gccl.ErrRemote, "a receive past what the sender sent before it closed")
	}
}

func testDeadlines(t *testing.T, p network.Provider) {
	lcfg, _ := configs()
	ln := listen(t, p, lcfg)
	c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	_, err := ln.Accept(c, network.Peer{Rank: connectRank, Channel: 0})
	cancel()
	require.ErrorIs(t, err, gccl.ErrTimeout, "Accept with nobody connecting")
	require.Less(t, time.Since(start), 5*time.Second, "Accept overran its deadline")

	s, r := pair(t, p, 0)
	data := randBytes(9, 5000)
	rb := newBuffer(t, r, len(data))
	q := post(t, func() (network.Request, error) { return r.Irecv(rb.region(len(data)), rb.m, 4) })
	if w, ok := q.(network.Waiter); ok {
		c, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := w.Wait(c)
		cancel()
		require.ErrorIs(t, err, gccl.ErrTimeout, "Wait with nothing sent")
	}
	sb := newBuffer(t, s, len(data))
	copy(sb.b, data)
	sq := post(t, func() (network.Request, error) { return s.Isend(sb.region(len(data)), sb.m, 4) })
	n, err := finish(ctx(t), q)
	require.NoError(t, err, "the request whose Wait expired must still complete")
	require.Equal(t, len(data), n)
	requireBytes(t, data, rb.b, "after an expired wait")
	_, err = finish(ctx(t), sq)
	require.NoError(t, err)
}

func testBadRegions(t *testing.T, p network.Provider) {
	s, r := pair(t, p, 0)
	a, b := newBuffer(t, s, 100), newBuffer(t, s, 100)
	_, err := s.Isend(network.HostRegion(b.b), a.m, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument, "a region outside its registration")
	rb := newBuffer(t, r, 10)
	_, err = r.Irecv(network.HostRegion(a.b), rb.m, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument, "a receive region outside its registration")
	devs, err := p.Devices()
	require.NoError(t, err)
	if devs[0].Memory&network.MemCUDA == 0 {
		_, err = s.Register(network.Region{Ptr: a.region(1).Ptr, Len: 1, Kind: network.MemCUDA})
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "CUDA memory on a device without it")
	}
	transfer(t, s, r, randBytes(3, 77), 9, 0) // still usable
}

func testCloseReleases(t *testing.T, p network.Provider) {
	before := leakcheck.Take()
	func() {
		lcfg, ccfg := configs()
		devs, err := p.Devices()
		require.NoError(t, err)
		require.NotEmpty(t, devs)
		ln, err := p.Listen(0, lcfg)
		require.NoError(t, err)
		defer ln.Close()
		s, err := p.Connect(ctx(t), 0, ln.Handle(), ccfg, 0)
		require.NoError(t, err)
		defer s.Close()
		r, err := ln.Accept(ctx(t), network.Peer{Rank: connectRank, Channel: 0})
		require.NoError(t, err)
		defer r.Close()
		transfer(t, s, r, randBytes(4, 200000), 0, 0)
		// a connection that arrived and was never accepted, and a pending receive
		s2, err := p.Connect(ctx(t), 0, ln.Handle(), ccfg, 1)
		require.NoError(t, err)
		defer s2.Close()
		rb := newBuffer(t, r, 10)
		q := post(t, func() (network.Request, error) { return r.Irecv(rb.region(10), rb.m, 1) })
		require.NoError(t, r.Close())
		_, err = finish(ctx(t), q)
		require.Error(t, err, "a receive pending at Close")
		require.NoError(t, r.Close(), "Close twice")
	}()
	require.Empty(t, before.Leaks(leakcheck.Grace), "what Close left behind")
}
