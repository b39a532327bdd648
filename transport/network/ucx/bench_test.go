package ucx

import (
	"fmt"
	"testing"
	"time"

	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/network/socket"
)

// spin tests the requests in turn until all are done (each Test
// progresses its side's worker), as a proxy does.
func spin(b *testing.B, reqs ...network.Request) {
	left := len(reqs)
	done := make([]bool, len(reqs))
	for left > 0 {
		for i, r := range reqs {
			if done[i] {
				continue
			}
			d, _, err := r.Test()
			if err != nil {
				b.Fatal(err)
			}
			if d {
				done[i] = true
				left--
			}
		}
	}
}

func post(b *testing.B, f func() (network.Request, error)) network.Request {
	for {
		r, err := f()
		if err != nil {
			b.Fatal(err)
		}
		if r != nil {
			return r
		}
	}
}

// BenchmarkPingPong: a message to the peer and back, over two
// connections of one process (UCX_TLS as TestMain sets it: tcp on
// loopback unless the environment says otherwise); the half round trip
// is reported as latency.
func BenchmarkPingPong(b *testing.B) {
	requireUCX(b)
	for _, size := range []int{8, 4096, 65536} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			p := New()
			s1, r1 := pair(b, p, 0) // there
			s2, r2 := pair(b, p, 1) // back
			a1, b1 := newBuffer(b, s1, size), newBuffer(b, r1, size)
			a2, b2 := newBuffer(b, s2, size), newBuffer(b, r2, size)
			b.SetBytes(int64(2 * size))
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				rq := post(b, func() (network.Request, error) { return r1.Irecv(b1.region(size), b1.m, 1) })
				sq := post(b, func() (network.Request, error) { return s1.Isend(a1.region(size), a1.m, 1) })
				spin(b, rq, sq)
				rq = post(b, func() (network.Request, error) { return r2.Irecv(b2.region(size), b2.m, 2) })
				sq = post(b, func() (network.Request, error) { return s2.Isend(a2.region(size), a2.m, 2) })
				spin(b, rq, sq)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/2, "µs/half-rtt")
		})
	}
}

// BenchmarkPingPongWait: a message to the peer and back between two
// goroutines that wait for their requests (network.Waiter) as the
// transport does, receives posted ahead, the socket provider beside ucx
// in the same run; the half round trip is reported as latency.
func BenchmarkPingPongWait(b *testing.B) {
	requireUCX(b)
	providers := []struct {
		name string
		new  func() network.Provider
	}{
		{"ucx", func() network.Provider { return New() }},
		{"socket", func() network.Provider { return socket.New(socket.Options{}) }},
	}
	for _, pr := range providers {
		for _, size := range []int{8, 1024, 65536} {
			b.Run(fmt.Sprintf("%s/%d", pr.name, size), func(b *testing.B) {
				p := pr.new()
				s1, r1 := pair(b, p, 0) // there
				s2, r2 := pair(b, p, 1) // back
				a1, b1 := newBuffer(b, s1, size), newBuffer(b, r1, size)
				a2, b2 := newBuffer(b, s2, size), newBuffer(b, r2, size)
				ctx := testCtx(b)
				wait := func(q network.Request) {
					if _, err := q.(network.Waiter).Wait(ctx); err != nil {
						b.Error(err)
					}
				}
				pong := make(chan struct{})
				go func() { // the peer: echoes each message back
					defer close(pong)
					for i := 0; i < b.N; i++ {
						wait(post(b, func() (network.Request, error) { return r1.Irecv(b1.region(size), b1.m, 1) }))
						wait(post(b, func() (network.Request, error) { return s2.Isend(a2.region(size), a2.m, 2) }))
					}
				}()
				b.SetBytes(int64(2 * size))
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					rq := post(b, func() (network.Request, error) { return r2.Irecv(b2.region(size), b2.m, 2) })
					wait(post(b, func() (network.Request, error) { return s1.Isend(a1.region(size), a1.m, 1) }))
					wait(rq)
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/2, "µs/half-rtt")
				<-pong
			})
		}
	}
}

// BenchmarkStream: one connection streaming messages with window of
// them in flight; MB/s is the bandwidth.
func BenchmarkStream(b *testing.B) {
	requireUCX(b)
	const window = 8
	for _, size := range []int{64 << 10, 1 << 20, 4 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s, r := pair(b, New(), 0)
			sb, rb := newBuffer(b, s, window*size), newBuffer(b, r, window*size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			var inflight []network.Request
			for i := 0; i < b.N; i++ {
				k := i % window
				if len(inflight) >= 2*window {
					spin(b, inflight[:2]...)
					inflight = inflight[2:]
				}
				rq := post(b, func() (network.Request, error) {
					return r.Irecv(rb.region(window*size).Slice(k*size, size), rb.m, uint32(k))
				})
				sq := post(b, func() (network.Request, error) {
					return s.Isend(sb.region(window*size).Slice(k*size, size), sb.m, uint32(k))
				})
				inflight = append(inflight, rq, sq)
			}
			spin(b, inflight...)
		})
	}
}
