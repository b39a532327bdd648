package proxy_test

import (
	"testing"

	"github.com/gccl/gccl/internal/engine/proxy"
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
	g0.hot, g1.hot = true, true
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

// BenchmarkPingPong: one 8-byte slot from rank 0 to rank 1 and one back,
// each kernel waiting for the other's: the round trip through both
// proxies (reported as µs per round trip).
func BenchmarkPingPong(b *testing.B) {
	w := newWorld(b, 2, nil)
	s01, r01 := w.connect(b, 0, 1, 0, 4096)
	s10, r10 := w.connect(b, 1, 0, 0, 4096)
	st := stream{seed: 2, slotBytes: 8}
	g0, g1 := w.gpu(0, nil), w.gpu(1, nil)
	g0.hot, g1.hot = true, true
	ping := func(n int) error {
		for range n {
			if err := g0.send(s01, st, 1); err != nil {
				return err
			}
			if err := g0.recv(r10, st, 1); err != nil {
				return err
			}
		}
		return nil
	}
	pong := func(n int) error {
		for range n {
			if err := g1.recv(r01, st, 1); err != nil {
				return err
			}
			if err := g1.send(s10, st, 1); err != nil {
				return err
			}
		}
		return nil
	}
	require.NoError(b, launch(func() error { return ping(20) }, func() error { return pong(20) })())
	b.ResetTimer()
	w.kick()
	require.NoError(b, launch(func() error { return ping(b.N) }, func() error { return pong(b.N) })())
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/roundtrip")
}
