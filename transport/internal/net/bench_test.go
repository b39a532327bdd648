package net

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/futex"
	"github.com/gccl/gccl/internal/nettest"
	"github.com/gccl/gccl/transport/network"
)

// BenchmarkPingPong: a transfer to a peer goroutine and back over two
// connections on loopback, each side waiting for its requests
// (network.Waiter) with receives posted ahead, with payload checksums
// off and on; the half round trip is reported as latency.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, MaxInline, 1 << 20} {
		for _, sum := range []bool{false, true} {
			b.Run(fmt.Sprintf("%d/checksum=%v", size, sum), func(b *testing.B) { benchPingPong(b, size, sum) })
		}
	}
}

func benchPingPong(b *testing.B, size int, sum bool) {
	p := newPingPong(b, Options{Timeout: time.Minute, Checksum: sum}, size)
	pong := p.echo(b, func(_ *RecvComm, q network.Request, err error) { benchWait(b, q, err) })
	b.SetBytes(int64(2 * size))
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		rq, err := p.r2.Irecv(p.rb, p.rm2, 2)
		sq, serr := p.s1.Isend(p.sa, p.sm1, 1)
		benchWait(b, sq, serr)
		benchWait(b, rq, err)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/1e3/float64(b.N)/2, "µs/half-rtt")
	<-pong
}

// pingPong is two connections over loopback TCP, there (s1 to r1) and
// back (s2 to r2), with a registered buffer of the transfer's size at each
// end.
type pingPong struct {
	s1, s2             *SendComm
	r1, r2             *RecvComm
	sa, ra, sb, rb     network.Region
	sm1, rm1, sm2, rm2 network.MemHandle
}

func newPingPong(b *testing.B, o Options, size int) *pingPong {
	p := &pingPong{}
	p.s1, p.r1 = benchPair(b, o)
	p.s2, p.r2 = benchPair(b, o)
	p.sa, p.sm1 = benchRegion(b, p.s1, size)
	p.ra, p.rm1 = benchRegion(b, p.r1, size)
	p.sb, p.sm2 = benchRegion(b, p.s2, size)
	p.rb, p.rm2 = benchRegion(b, p.r2, size)
	return p
}

// echo starts the peer, which receives each of b.N transfers on r1 (recv
// waits for it) and sends it back on s2; the channel closes when it is
// done.
func (p *pingPong) echo(b *testing.B, recv func(*RecvComm, network.Request, error)) <-chan struct{} {
	pong := make(chan struct{})
	go func() {
		defer close(pong)
		for range b.N {
			q, err := p.r1.Irecv(p.ra, p.rm1, 1)
			recv(p.r1, q, err)
			sq, serr := p.s2.Isend(p.sb, p.sm2, 2)
			benchWait(b, sq, serr)
		}
	}()
	return pong
}

// benchPair connects a sending and a receiving end over loopback TCP: a
// control socket and two data sockets.
func benchPair(b *testing.B, o Options) (*SendComm, *RecvComm) {
	out, in := nettest.TCPPairs(b, 3)
	s, err := NewSendComm(out, o)
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRecvComm(in, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(); r.Close() })
	return s, r
}

// BenchmarkPolled: one goroutine sends a 512-byte transfer and polls its
// receive with Test until it arrived, as the GPU proxy does, with the
// receiving end in its default mode and with PollOnly. Reported: the p50
// of the Isend call (its non-blocking write) and of the whole transfer. With
// idle Ps, Go keeps a thread blocked in its network poller, and in the
// default mode every frame wakes it (and the reader goroutine), which the
// sender's write pays for; PollOnly takes that wake-up away.
func BenchmarkPolled(b *testing.B) {
	for _, poll := range []bool{false, true} {
		b.Run(fmt.Sprintf("pollOnly=%v", poll), func(b *testing.B) { benchPolled(b, poll) })
	}
}

func benchPolled(b *testing.B, pollOnly bool) {
	const size = 512
	s, r := benchPair(b, Options{Timeout: time.Minute})
	if pollOnly {
		if err := r.PollOnly(); err != nil {
			b.Fatal(err)
		}
	}
	sb, rb := make([]byte, size), make([]byte, size)
	sm, err := s.Register(network.HostRegion(sb))
	if err != nil {
		b.Fatal(err)
	}
	rm, err := r.Register(network.HostRegion(rb))
	if err != nil {
		b.Fatal(err)
	}
	isend := make([]time.Duration, 0, b.N)
	whole := make([]time.Duration, 0, b.N)
	test := func(q network.Request, err error) {
		for err == nil {
			var done bool
			if done, _, err = q.Test(); done {
				break
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range b.N {
		rq, rerr := r.Irecv(network.HostRegion(rb), rm, uint32(i))
		t0 := time.Now()
		sq, serr := s.Isend(network.HostRegion(sb), sm, uint32(i))
		t1 := time.Now()
		test(rq, rerr)
		whole = append(whole, time.Since(t0))
		isend = append(isend, t1.Sub(t0))
		test(sq, serr)
	}
	b.StopTimer()
	b.ReportMetric(p50µs(isend), "p50-µs-isend")
	b.ReportMetric(p50µs(whole), "p50-µs-transfer")
}

// BenchmarkSpinWait: a ping-pong of 1 KiB and 16 KiB between two
// goroutines over two connections on loopback, each side Waiting
// (network.Waiter) for its receive, so that Wait spins (GCCL_HOST_SPIN;
// skipped where the spin time is none), as the host backend's ranks do,
// with the receiving control sockets' SO_RCVLOWAT in three modes (spinMark).
// Reported: the p50 of the half round trip and of the initiator's Isend
// call, and the setsockopt calls per round trip (both receiving ends).
// With idle Ps, Go keeps a thread in its network poller, which every frame
// arriving at a mark of 1 wakes (with the reader goroutine), in the
// sender's write.
func BenchmarkSpinWait(b *testing.B) {
	if futex.SpinTime() <= 0 {
		b.Skip("no spin time: set GCCL_HOST_SPIN (auto spins on hosts of 4 CPUs or more)")
	}
	for _, size := range []int{1 << 10, 16 << 10} {
		for _, mode := range []spinMark{markOff, markToggle, markLazy} {
			b.Run(fmt.Sprintf("%d/mark=%s", size, mode), func(b *testing.B) { benchSpinWait(b, size, mode) })
		}
	}
}

// spinMark is how BenchmarkSpinWait's receiving ends treat SO_RCVLOWAT.
type spinMark int

const (
	markOff    spinMark = iota // left at 1, as before lowMark (the requests' mark cleared)
	markToggle                 // raised by each spin, lowered after each receive's Wait (branch lowat: two setsockopt calls per wait)
	markLazy                   // raised by a spin, lowered only before a Wait sleeps (lowMark as it is)
)

func (m spinMark) String() string { return [...]string{"off", "toggle", "lazy"}[m] }

func benchSpinWait(b *testing.B, size int, mode spinMark) {
	p := newPingPong(b, Options{Timeout: time.Minute}, size)
	if mode == markOff {
		for _, r := range []*RecvComm{p.r1, p.r2} {
			for _, q := range r.all {
				q.mark = nil // the behaviour before lowMark
			}
		}
	}
	sets1, sets2 := countSets(p.r1), countSets(p.r2)
	recv := func(r *RecvComm, q network.Request, err error) {
		benchWait(b, q, err)
		if mode == markToggle { // what lowat's last spinner out did
			r.mark.sleeping()
			r.mark.awake()
		}
	}
	pong := p.echo(b, recv)
	isend := make([]time.Duration, 0, b.N)
	hop := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		rq, err := p.r2.Irecv(p.rb, p.rm2, 2)
		t0 := time.Now()
		sq, serr := p.s1.Isend(p.sa, p.sm1, 1)
		t1 := time.Now()
		benchWait(b, sq, serr)
		recv(p.r2, rq, err)
		hop = append(hop, time.Since(t0)/2)
		isend = append(isend, t1.Sub(t0))
	}
	b.StopTimer()
	<-pong
	b.ReportMetric(p50µs(hop), "p50-µs-half-rtt")
	b.ReportMetric(p50µs(isend), "p50-µs-isend")
	b.ReportMetric(float64(sets1.Load()+sets2.Load())/float64(b.N), "setsockopt/rtt")
}

// p50µs is the median of d in microseconds (it sorts d).
func p50µs(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Nanoseconds()) / 1e3
}

// BenchmarkMarkToggle: what lowering the mark after each spin would add
// to each wait, one raise and one lower of SO_RCVLOWAT (two setsockopt
// calls), which lowMark's lazy lowering spares back-to-back Waits.
func BenchmarkMarkToggle(b *testing.B) {
	_, r := benchPair(b, Options{Timeout: time.Minute})
	for b.Loop() {
		r.mark.spinning()
		r.mark.sleeping()
		r.mark.awake()
	}
}

// benchRegion registers a host buffer of size bytes with c.
func benchRegion(b *testing.B, c network.Comm, size int) (network.Region, network.MemHandle) {
	reg := network.HostRegion(make([]byte, size))
	m, err := c.Register(reg)
	if err != nil {
		b.Fatal(err)
	}
	return reg, m
}

// benchWait waits for q, which its post returned with err.
func benchWait(b *testing.B, q network.Request, err error) {
	if err == nil {
		_, err = q.(network.Waiter).Wait(context.Background())
	}
	if err != nil {
		b.Error(err)
	}
}
