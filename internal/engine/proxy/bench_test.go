package proxy_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoAllocations: in steady state a slot's trip through both proxies
// and the socket provider allocates nothing, for slots sent inline and
// slots cut into pieces. (testing.AllocsPerRun counts the whole process:
// the proxies' goroutines and the provider's too.)
func TestNoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	noLeaks(t)
	w := newWorld(t, 2, nil)
	for _, slot := range []int{64 << 10, 512 << 10} {
		send, recv := w.connect(t, 0, 1, slot>>16, slot)
		st := stream{seed: 1, slotBytes: slot}
		g0, g1 := w.gpu(0, nil), w.gpu(1, nil)
		one := func() {
			if err := g0.send(send, st, 1); err != nil {
				panic(err)
			}
			if err := g1.recv(recv, st, 1); err != nil {
				panic(err)
			}
		}
		for range 50 { // warm up: requests, queues and buffers grown
			one()
		}
		allocs := testing.AllocsPerRun(200, one)
		t.Logf("%d-byte slots: %.3f allocations per slot", slot, allocs)
		assert.Less(t, allocs, 0.05, "%d-byte slots", slot)
	}
}

// BenchmarkThroughput: slots of 512 KiB, all full, from rank 0 to rank 1
// over loopback, the sending kernel NSlots ahead of the receiving one.
func BenchmarkThroughput(b *testing.B) {
	const slot = proxy.DefaultSlotBytes
	w := newWorld(b, 2, nil)
	send, recv := w.connect(b, 0, 1, 0, slot)
	g0, g1 := w.gpu(0, nil), w.gpu(1, nil)
	// every slot full; the data is not regenerated or checked here
	sendFull := func(n int) error {
		for range n {
			tail := send.Tail()
			for spins := 0; tail-send.Head() >= proxy.NSlots; spins++ {
				if err := g0.pause(spins); err != nil {
					return err
				}
			}
			send.SetSize(tail, slot)
			send.StoreTail(tail + 1)
		}
		return nil
	}
	recvAll := func(n int) error {
		for range n {
			head := recv.Head()
			for spins := 0; recv.Tail() <= head; spins++ {
				if err := g1.pause(spins); err != nil {
					return err
				}
			}
			recv.StoreHead(head + 1)
		}
		return nil
	}
	require.NoError(b, launch(func() error { return sendFull(16) }, func() error { return recvAll(16) })())
	b.SetBytes(slot)
	b.ResetTimer()
	w.kick()
	require.NoError(b, launch(func() error { return sendFull(b.N) }, func() error { return recvAll(b.N) })())
	b.StopTimer()
	b.ReportMetric(float64(b.N)*slot/b.Elapsed().Seconds()/1e9, "GB/s")
}

// pingSizes are the slot sizes of the ping-pong benchmarks: 8 bytes, and
// 512, what each hop of a 1 KiB float32 all-reduce of 2 ranks carries.
var pingSizes = []int{8, 512}

// BenchmarkPingPong: one slot from rank 0 to rank 1 and one back on
// channel 0, each kernel waiting (never sleeping, as kernels do) for the
// other's: the round trip through both proxies, two hops (reported as µs
// per round trip and per hop). idle=3: three more channels connected each
// way carry nothing, as with the default GCCL_NET_NCHANNELS (4) and an
// operation small enough for one channel.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range pingSizes {
		for _, idle := range []int{0, 3} {
			b.Run(fmt.Sprintf("bytes=%d/idle=%d", size, idle), func(b *testing.B) { pingPong(b, size, idle) })
		}
	}
}

func pingPong(b *testing.B, size, idleChannels int) {
	w := newWorld(b, 2, nil)
	s01, r01 := w.connect(b, 0, 1, 0, 4096)
	s10, r10 := w.connect(b, 1, 0, 0, 4096)
	for ch := 1; ch <= idleChannels; ch++ {
		w.connect(b, 0, 1, ch, 4096)
		w.connect(b, 1, 0, ch, 4096)
	}
	st := stream{seed: 2, slotBytes: size, full: true}
	g0, g1 := w.gpu(0, nil), w.gpu(1, nil)
	g0.hot, g1.hot = true, true
	w.kick()
	require.NoError(b, launch(
		func() error { return g0.pingPong(s01, r10, st, 20, true) },
		func() error { return g1.pingPong(s10, r01, st, 20, false) })())
	g0.times = g0.times[:0]
	b.ResetTimer()
	w.kick()
	require.NoError(b, launch(
		func() error { return g0.pingPong(s01, r10, st, b.N, true) },
		func() error { return g1.pingPong(s10, r01, st, b.N, false) })())
	b.StopTimer()
	reportRoundTrip(b, g0)
}

// reportRoundTrip reports the benchmark's time per round trip and per
// hop (half a round trip), in µs, and with g (the kernel that timed each
// round trip; nil: none) the median and 90th percentile hop, which a
// loaded machine's outliers move less.
func reportRoundTrip(b *testing.B, g *gpu) {
	rt := float64(b.Elapsed().Nanoseconds()) / 1e3 / float64(b.N)
	b.ReportMetric(rt, "µs/roundtrip")
	b.ReportMetric(rt/2, "µs/hop")
	if g != nil && len(g.times) > 0 {
		b.ReportMetric(float64(g.quantile(0.5).Nanoseconds())/2e3, "p50-µs/hop")
		b.ReportMetric(float64(g.quantile(0.9).Nanoseconds())/2e3, "p90-µs/hop")
	}
}

// BenchmarkPingPongProvider is BenchmarkPingPong's baseline: the same
// round trips through the socket provider alone, two goroutines
// posting requests and waiting for them (network.Waiter), with no FIFO
// and no proxy.
func BenchmarkPingPongProvider(b *testing.B) {
	for _, size := range pingSizes {
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) { pingPongProvider(b, size) })
	}
}

func pingPongProvider(b *testing.B, size int) {
	w := newWorld(b, 2, nil)
	s01, r01 := w.dial(b, 0, 1, 0)
	s10, r10 := w.dial(b, 1, 0, 0)
	for _, c := range []network.Comm{s01, r01, s10, r10} {
		b.Cleanup(func() { _ = c.Close() })
	}
	buf := func(c network.Comm) (network.Region, network.MemHandle) {
		m, err := c.Register(network.HostRegion(make([]byte, size)))
		require.NoError(b, err)
		return m.Region(), m
	}
	// done waits for r (Wait: parked, no polling) or tests it until it
	// is done, yielding in between.
	done := func(r network.Request, err error) error {
		if err != nil {
			return err
		}
		if w, ok := r.(network.Waiter); ok {
			_, err := w.Wait(context.Background())
			return err
		}
		for {
			ok, _, err := r.Test()
			if ok || err != nil {
				return err
			}
			runtime.Gosched()
		}
	}
	side := func(s network.SendComm, r network.RecvComm, first bool, n int) func() error {
		sr, sm := buf(s)
		rr, rm := buf(r)
		return func() error {
			for i := range n {
				if !first {
					if err := done(r.Irecv(rr, rm, uint32(i))); err != nil {
						return err
					}
				}
				if err := done(s.Isend(sr, sm, uint32(i))); err != nil {
					return err
				}
				if first {
					if err := done(r.Irecv(rr, rm, uint32(i))); err != nil {
						return err
					}
				}
			}
			return nil
		}
	}
	b.ResetTimer()
	require.NoError(b, launch(side(s01, r10, true, b.N), side(s10, r01, false, b.N))())
	b.StopTimer()
	reportRoundTrip(b, nil)
}

// BenchmarkThroughputProvider is BenchmarkThroughput's baseline: 512 KiB
// transfers through the socket provider alone, NSlots in flight on each
// side, waited for in order (network.Waiter), with no FIFO and no proxy.
func BenchmarkThroughputProvider(b *testing.B) {
	const slot = proxy.DefaultSlotBytes
	w := newWorld(b, 2, nil)
	sc, rc := w.dial(b, 0, 1, 0)
	b.Cleanup(func() { _ = sc.Close(); _ = rc.Close() })
	stream := func(c network.Comm, post func(network.Region, network.MemHandle, uint32) (network.Request, error), n int) func() error {
		m, err := c.Register(network.HostRegion(make([]byte, proxy.NSlots*slot)))
		require.NoError(b, err)
		return func() error {
			var reqs [proxy.NSlots]network.Request
			for i := range n + proxy.NSlots {
				k := i % proxy.NSlots
				if i >= proxy.NSlots {
					if _, err := reqs[k].(network.Waiter).Wait(context.Background()); err != nil {
						return err
					}
				}
				if i < n {
					r, err := post(m.Region().Slice(k*slot, slot), m, uint32(i))
					if err != nil || r == nil {
						return fmt.Errorf("post %d: %v %v", i, r, err)
					}
					reqs[k] = r
				}
			}
			return nil
		}
	}
	b.SetBytes(slot)
	b.ResetTimer()
	require.NoError(b, launch(stream(sc, sc.Isend, b.N), stream(rc, rc.Irecv, b.N))())
	b.StopTimer()
	b.ReportMetric(float64(b.N)*slot/b.Elapsed().Seconds()/1e9, "GB/s")
}
