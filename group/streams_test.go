package group_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/hoststream"
	"github.com/stretchr/testify/require"
)

// within runs f and fails the test if it has not returned after d (a
// deadlock), or returned an error.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		require.NoError(t, err, what)
	case <-time.After(d):
		t.Fatalf("%s: not done after %v (deadlock)", what, d)
	}
}

// initAll is comm.InitAllN(n); the communicators are closed when the test
// ends (aborted if it failed, so that a deadlocked test ends at once).
func initAll(t *testing.T, n int) []*comm.Comm {
	t.Helper()
	comms, err := comm.InitAllN(n)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			if t.Failed() {
				_ = c.Abort()
			} else {
				_ = c.Close()
			}
		}
	})
	return comms
}

// int32s allocates n int32 on d, all set to v.
func int32s(t *testing.T, d device.Device, n int, v int32) uintptr {
	t.Helper()
	p, err := d.Alloc(4 * n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Free(p) })
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	require.NoError(t, d.CopyIn(p, b))
	return p
}

// checkInt32s checks that the n int32 at p on d are all want.
func checkInt32s(d device.Device, p uintptr, n int, want int32) error {
	b := make([]byte, 4*n)
	if err := d.CopyOut(b, p); err != nil {
		return err
	}
	for i := range n {
		if got := int32(binary.LittleEndian.Uint32(b[4*i:])); got != want {
			return fmt.Errorf("element %d is %d, want %d", i, got, want)
		}
	}
	return nil
}

// TestDefaultStreamPerDevice: stream 0 is each device's own default stream
// (as CUDA's legacy stream), so InitAll(4) and one group of AllReduce on
// stream 0 completes.
func TestDefaultStreamPerDevice(t *testing.T) {
	const n, count = 4, 1000
	comms := initAll(t, n)
	bufs := make([]uintptr, n)
	g := group.New()
	for r, c := range comms {
		bufs[r] = int32s(t, c.Device(), count, int32(r+1))
		g.AllReduce(c, bufs[r], bufs[r], count, gccl.Int32, gccl.Sum, 0)
	}
	within(t, 20*time.Second, "group on stream 0", func() error {
		if err := g.End(); err != nil {
			return err
		}
		for r, c := range comms {
			if err := c.Device().Synchronize(0); err != nil {
				return err
			}
			if err := checkInt32s(c.Device(), bufs[r], count, n*(n+1)/2); err != nil {
				return fmt.Errorf("rank %d: %w", r, err)
			}
		}
		return nil
	})
}

// ops adds operations to groups and keeps the checks of their results.
type ops struct {
	t      *testing.T
	checks []func() error
}

// allReduce adds a sum of count int32 of rank r of w: rank r gives
// (r+1)*k, so every rank gets k*n(n+1)/2.
func (o *ops) allReduce(g *group.Group, w *colltest.World, r int, k int32, s gccl.Stream) {
	const count = 5000
	n, d := w.N(), w.Devs[r]
	p := int32s(o.t, d, count, int32(r+1)*k)
	g.AllReduce(w.Comms[r], p, p, count, gccl.Int32, gccl.Sum, s)
	o.checks = append(o.checks, func() error { return checkInt32s(d, p, count, k*int32(n*(n+1)/2)) })
}

// send adds a send of count int32, all v, from rank r of w to peer.
func (o *ops) send(g *group.Group, w *colltest.World, r, peer, count int, v int32, s gccl.Stream) {
	g.Send(w.Comms[r], int32s(o.t, w.Devs[r], count, v), count, gccl.Int32, peer, s)
}

// recv adds the matching receive at rank r from peer, checked for v.
func (o *ops) recv(g *group.Group, w *colltest.World, r, peer, count int, v int32, s gccl.Stream) {
	d := w.Devs[r]
	p := int32s(o.t, d, count, -1)
	g.Recv(w.Comms[r], p, count, gccl.Int32, peer, s)
	o.checks = append(o.checks, func() error { return checkInt32s(d, p, count, v) })
}

func (o *ops) check() error {
	for _, c := range o.checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// TestSharedStreamAnyCommOrder: every rank runs one group over two
// communicators A and B on one stream, but ranks add the communicators in
// different orders. As in NCCL the group is one call: only each
// communicator's own order must match across ranks.
func TestSharedStreamAnyCommOrder(t *testing.T) {
	const big = 1 << 20 // int32: sends that wait for the receiver
	cases := []struct {
		name string
		n    int
		add  func(o *ops, g *group.Group, r int, a, b *colltest.World, s gccl.Stream)
	}{
		{"send-then-collectives", 3, func(o *ops, g *group.Group, r int, a, b *colltest.World, s gccl.Stream) {
			switch r { // ranks 0 and 1 meet A first, rank 2 meets B first
			case 1:
				o.send(g, a, r, 0, 100, 7, s)
			case 0:
				o.recv(g, a, r, 1, 100, 7, s)
			}
			o.allReduce(g, b, r, 1, s)
			o.allReduce(g, a, r, 2, s)
		}},
		{"odd-ranks-B-first", 4, func(o *ops, g *group.Group, r int, a, b *colltest.World, s gccl.Stream) {
			first, second := a, b
			if r%2 == 1 {
				first, second = b, a
			}
			o.allReduce(g, first, r, 3, s)
			o.allReduce(g, second, r, 3, s)
		}},
		{"pipeline", 4, func(o *ops, g *group.Group, r int, a, b *colltest.World, s gccl.Stream) {
			// Stage r sends to r+1 on A when r is even, on B when odd,
			// and receives from r-1 on the other.
			out, in := a, b
			if r%2 == 1 {
				out, in = b, a
			}
			o.send(g, out, r, (r+1)%4, big, int32(r), s)
			o.recv(g, in, r, (r+3)%4, big, int32((r+3)%4), s)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := &comm.Config{Timeout: 10 * time.Second}
			a, b := colltest.New(t, c.n, cfg), colltest.New(t, c.n, cfg)
			o := &ops{t: t}
			for r := range c.n {
				g := group.New()
				c.add(o, g, r, a, b, a.Streams[r]) // one stream for both
				require.NoError(t, g.End(), "rank %d", r)
			}
			within(t, 20*time.Second, "groups on a shared stream", func() error {
				for r := range c.n {
					if err := a.Devs[r].Synchronize(a.Streams[r]); err != nil {
						return fmt.Errorf("rank %d: %w", r, err)
					}
				}
				return o.check()
			})
		})
	}
}

// TestOneCommSeveralStreams: one communicator's operations in a group may
// use several streams (NCCL >= 2.20); the launch joins them: it waits for
// what each stream ran before, and later work on each waits for it.
func TestOneCommSeveralStreams(t *testing.T) {
	const n = 3
	w := colltest.New(t, n, &comm.Config{Timeout: 10 * time.Second})
	o := &ops{t: t}
	second := make([]gccl.Stream, n)
	release := make(chan struct{})
	for r := range n {
		s, err := w.Devs[r].NewStream()
		require.NoError(t, err)
		t.Cleanup(func() { _ = w.Devs[r].DestroyStream(s) })
		second[r] = s
		hs, err := hoststream.Lookup(w.Devs[r].Ordinal(), s)
		require.NoError(t, err)
		require.NoError(t, hs.Enqueue(func() error { <-release; return nil }))
		g := group.New()
		o.allReduce(g, w, r, 5, w.Streams[r])
		o.send(g, w, r, (r+1)%n, 1000, int32(r), s)
		o.recv(g, w, r, (r+n-1)%n, 1000, int32((r+n-1)%n), w.Streams[r])
		require.NoError(t, g.End(), "rank %d", r)
	}
	time.Sleep(50 * time.Millisecond)
	for r := range n {
		done, err := w.Devs[r].Query(w.Streams[r])
		require.NoError(t, err)
		require.False(t, done, "rank %d ran before its second stream's earlier work", r)
	}
	close(release)
	within(t, 20*time.Second, "group on two streams", func() error {
		for r := range n { // the second stream waits for the whole launch
			if err := w.Devs[r].Synchronize(second[r]); err != nil {
				return fmt.Errorf("rank %d: %w", r, err)
			}
		}
		return o.check()
	})
}
