package net

import (
	"context"
	"fmt"
	"testing"
	"time"

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
	o := Options{Timeout: time.Minute, Checksum: sum}
	s1, r1 := benchPair(b, o) // there
	s2, r2 := benchPair(b, o) // back
	ctx := context.Background()
	buf := func(c network.Comm) (network.Region, network.MemHandle) {
		reg := network.HostRegion(make([]byte, size))
		m, err := c.Register(reg)
		if err != nil {
			b.Fatal(err)
		}
		return reg, m
	}
	do := func(q network.Request, err error) {
		if err == nil {
			_, err = q.(network.Waiter).Wait(ctx)
		}
		if err != nil {
			b.Error(err)
		}
	}
	sa, sm1 := buf(s1)
	ra, rm1 := buf(r1)
	sb, sm2 := buf(s2)
	rb, rm2 := buf(r2)
	pong := make(chan struct{})
	go func() { // the peer: echoes each transfer back
		defer close(pong)
		for range b.N {
			do(r1.Irecv(ra, rm1, 1))
			do(s2.Isend(sb, sm2, 2))
		}
	}()
	b.SetBytes(int64(2 * size))
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		rq, err := r2.Irecv(rb, rm2, 2)
		do(s1.Isend(sa, sm1, 1))
		do(rq, err)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/1e3/float64(b.N)/2, "µs/half-rtt")
	<-pong
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
