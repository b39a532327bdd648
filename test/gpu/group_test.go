package gpu

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// groupRanks is how many ranks of each communicator this process holds
// for the group tests, so that there are at least three: three in a
// single process, two per process under mpirun -np 2, one otherwise. They
// need a GPU each, or -gccl.device N puts every rank on GPU N (so on a
// machine with one GPU, three ranks share it in one process, or two in
// each of two processes; scripts/run-gpu.sh runs both).
func groupRanks(t *testing.T) int {
	per := 1
	switch _, size := mpiboot.World(); size {
	case 1:
		per = 3
	case 2:
		per = 2
	}
	requireGPUs(t, per)
	return per
}

// rankData is one rank's buffers and the checks of its outputs.
type rankData struct {
	cm     *comm.Comm
	bufs   *harness.Buffers
	checks []func() error
}

// allReduce adds a sum of count elements of dt (inputs from seed) on c.
func (d *rankData) allReduce(g *group.Group, c *comm.Comm, seed uint64, dt gccl.DataType, count int, s gccl.Stream) {
	n := c.Count()
	send := d.bufs.Alloc(count*dt.Size(), harness.Input(seed, c.Rank(), dt, count))
	recv := d.bufs.Alloc(count*dt.Size(), nil) // poisoned
	g.AllReduce(c, send, recv, count, dt, gccl.Sum, s)
	d.checks = append(d.checks, func() error {
		want := reduce.Reference(harness.Inputs(seed, n, dt, count), dt, gccl.Sum, 0)
		if err := reduce.Check(d.bufs.Read(recv, count*dt.Size()), want, dt, n); err != nil {
			return fmt.Errorf("all-reduce %d: %w", seed, err)
		}
		return nil
	})
}

// send adds a send of count elements of dt (from seed) on c to peer.
func (d *rankData) send(g *group.Group, c *comm.Comm, seed uint64, dt gccl.DataType, count, peer int, s gccl.Stream) {
	g.Send(c, d.bufs.Alloc(count*dt.Size(), harness.Input(seed, c.Rank(), dt, count)), count, dt, peer, s)
}

// recv adds the matching receive on c from peer.
func (d *rankData) recv(g *group.Group, c *comm.Comm, seed uint64, dt gccl.DataType, count, peer int, s gccl.Stream) {
	p := d.bufs.Alloc(count*dt.Size(), nil)
	g.Recv(c, p, count, dt, peer, s)
	d.checks = append(d.checks, func() error {
		if err := reduce.Check(d.bufs.Read(p, count*dt.Size()), harness.Input(seed, peer, dt, count), dt, 1); err != nil {
			return fmt.Errorf("receive %d from %d: %w", seed, peer, err)
		}
		return nil
	})
}

func (d *rankData) check() error {
	var errs []error
	for _, c := range d.checks {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// TestGroupCommOrder: every rank runs one group over two communicators A
// and B on its one stream, the ranks adding them in different orders (as
// in NCCL a group is one call: only each communicator's own order must
// match). Rank 1 sends to rank 0 on A and the ranks not in the send meet
// B first; odd ranks add B first; a pipeline sends on one communicator and
// receives on the other. Before issue 16 each rank queued its
// communicators' kernels in the order it added them, and the kernels
// waited for each other until the timeout. Random inputs, poisoned
// outputs, every element checked.
func TestGroupCommOrder(t *testing.T) {
	per := groupRanks(t)
	a := harness.LocalComms(t, per, config(), *oneDevice)
	b := harness.LocalComms(t, per, config(), *oneDevice)
	for i := range per {
		require.Equal(t, a[i].Rank(), b[i].Rank())
	}
	n := a[0].Count()
	const small, large, p2p = 1001, 300_007, 100_003
	cases := []struct {
		name string
		add  func(d *rankData, g *group.Group, r int, ca, cb *comm.Comm, s gccl.Stream)
	}{
		{"send-then-collectives", func(d *rankData, g *group.Group, r int, ca, cb *comm.Comm, s gccl.Stream) {
			switch r { // ranks 0 and 1 add A first, the others B
			case 1:
				d.send(g, ca, 1, gccl.Int32, p2p, 0, s)
			case 0:
				d.recv(g, ca, 1, gccl.Int32, p2p, 1, s)
			}
			d.allReduce(g, cb, 2, gccl.Float32, large, s)
			d.allReduce(g, ca, 3, gccl.Int32, small, s)
		}},
		{"odd-ranks-B-first", func(d *rankData, g *group.Group, r int, ca, cb *comm.Comm, s gccl.Stream) {
			addA := func() { d.allReduce(g, ca, 4, gccl.Float32, small, s) }
			addB := func() { d.allReduce(g, cb, 5, gccl.Int32, large, s) }
			if r%2 == 1 {
				addB()
				addA()
			} else {
				addA()
				addB()
			}
		}},
		{"pipeline", func(d *rankData, g *group.Group, r int, ca, cb *comm.Comm, s gccl.Stream) {
			// Rank r sends to r+1 on A when r is even, on B when odd, and
			// receives from r-1 on the communicator r-1 sent on.
			on := func(q int) *comm.Comm { return []*comm.Comm{ca, cb}[q%2] }
			from := (r + n - 1) % n
			d.send(g, on(r), 6, gccl.Int32, p2p, (r+1)%n, s)
			d.recv(g, on(from), 6, gccl.Int32, p2p, from, s)
		}},
	}
	streams := make([]gccl.Stream, per)
	for i := range per {
		streams[i] = harness.NewBuffers(t, a[i].Device()).Stream() // A's and B's: one device
	}
	for _, c := range cases {
		var failures []error
		t.Run(c.name, func(t *testing.T) {
			data, groups := make([]*rankData, per), make([]*group.Group, per)
			for i := range per { // every buffer before any kernel runs
				data[i] = &rankData{cm: a[i], bufs: harness.NewBuffers(t, a[i].Device())}
				groups[i] = group.New()
				c.add(data[i], groups[i], a[i].Rank(), a[i], b[i], streams[i])
			}
			for i, g := range groups {
				if err := g.End(); err != nil {
					failures = append(failures, fmt.Errorf("rank %d: End: %w", a[i].Rank(), err))
				}
			}
			for i, d := range data {
				err := mpiboot.Wait(a[i].Device(), streams[i], 0)
				if err == nil {
					err = errors.Join(a[i].AsyncError(), b[i].AsyncError())
				}
				if err == nil {
					err = d.check()
				}
				if err != nil {
					failures = append(failures, fmt.Errorf("rank %d: %w", a[i].Rank(), err))
				}
			}
		})
		if !harness.Agree(t, failures) {
			return
		}
	}
}

// streamGate makes streams wait (cuStreamWaitValue32 on a host-mapped
// word) until open is called.
type streamGate struct {
	dev  *device.CUDADevice
	host uintptr
}

func newStreamGate(t *testing.T, dev *device.CUDADevice) *streamGate {
	drv := driverOf(dev)
	g := &streamGate{dev: dev}
	require.NoError(t, dev.Do(func() (err error) {
		g.host, err = drv.MemHostAlloc(64, cuda.HostAllocDeviceMap|cuda.HostAllocPortable)
		return err
	}))
	atomic.StoreUint32(g.word(), 0)
	// Registered before the streams, so it runs after their cleanups
	// waited for them; opened first in case a test failed early.
	t.Cleanup(func() {
		g.open()
		_ = dev.Do(func() error { _ = drv.CtxSynchronize(); return drv.MemFreeHost(g.host) })
	})
	return g
}

func (g *streamGate) word() *uint32 {
	return (*uint32)(unsafe.Pointer(unsafe.SliceData(device.HostBytes(g.host, 4))))
}

// close makes s wait until open.
func (g *streamGate) close(s gccl.Stream) error {
	drv := driverOf(g.dev)
	return g.dev.Do(func() error {
		p, err := drv.MemHostGetDevicePointer(g.host)
		if err == nil {
			err = drv.StreamWaitValue32(cuda.Stream(s), p, 1, cuda.WaitValueGEQ)
		}
		return err
	})
}

func (g *streamGate) open() { atomic.StoreUint32(g.word(), 1) }

// Sizes of TestGroupSeveralStreams's operations.
const (
	severalAllReduce = 10_007 // float32
	severalP2P       = 50_021 // int32
	severalGather    = 777    // uint8 per rank
)

// streamsRank is one rank of TestGroupSeveralStreams: one group of one
// communicator on streams s1 (where the launch runs) and s2. Every buffer
// is allocated before anything is enqueued (no allocation or synchronous
// copy while a stream is being captured).
type streamsRank struct {
	rankData
	dev    *device.CUDADevice
	gate   *streamGate
	s1, s2 gccl.Stream
	// The all-reduce: staged is its input, copied into in on s2 before
	// the group; copied is its result, copied from out on s2 after it.
	staged, in, out, copied         uintptr
	send, recv, gatherIn, gatherOut uintptr
	outputs                         [][2]uintptr // every output buffer and its size, poisoned before each run
}

func newStreamsRank(t *testing.T, cm *comm.Comm, seed uint64) *streamsRank {
	dev, ok := cm.Device().(*device.CUDADevice)
	require.True(t, ok)
	n, r := cm.Count(), cm.Rank()
	x := &streamsRank{rankData: rankData{cm: cm, bufs: harness.NewBuffers(t, dev)}, dev: dev, gate: newStreamGate(t, dev)}
	x.s1, x.s2 = x.bufs.Stream(), x.bufs.Stream()
	output := func(n int) uintptr {
		p := x.bufs.Alloc(n, nil) // poisoned
		x.outputs = append(x.outputs, [2]uintptr{p, uintptr(n)})
		return p
	}
	arBytes := severalAllReduce * 4
	x.staged = x.bufs.Alloc(arBytes, harness.Input(seed, r, gccl.Float32, severalAllReduce))
	x.in, x.out, x.copied = output(arBytes), output(arBytes), output(arBytes)
	x.send = x.bufs.Alloc(4*severalP2P, harness.Input(seed+1, r, gccl.Int32, severalP2P))
	x.recv = output(4 * severalP2P)
	x.gatherIn = x.bufs.Alloc(severalGather, harness.Input(seed+2, r, gccl.Uint8, severalGather))
	x.gatherOut = output(severalGather * n)

	sum := reduce.Reference(harness.Inputs(seed, n, gccl.Float32, severalAllReduce), gccl.Float32, gccl.Sum, 0)
	var gathered []byte
	for q := range n {
		gathered = append(gathered, harness.Input(seed+2, q, gccl.Uint8, severalGather)...)
	}
	from := (r + n - 1) % n
	for _, c := range []struct {
		what      string
		p         uintptr
		want      []byte
		dt        gccl.DataType
		nreducers int
	}{
		{"all-reduce", x.out, sum, gccl.Float32, n},
		{"copy of the all-reduce's result made on the other stream after the group", x.copied, sum, gccl.Float32, n},
		{fmt.Sprintf("receive from %d", from), x.recv, harness.Input(seed+1, from, gccl.Int32, severalP2P), gccl.Int32, 1},
		{"all-gather", x.gatherOut, gathered, gccl.Uint8, 1},
	} {
		x.checks = append(x.checks, func() error {
			if err := reduce.Check(x.bufs.Read(c.p, len(c.want)), c.want, c.dt, c.nreducers); err != nil {
				return fmt.Errorf("%s: %w", c.what, err)
			}
			return nil
		})
	}
	return x
}

// copyAsync copies n bytes from src to dst on s.
func (x *streamsRank) copyAsync(dst, src uintptr, n int, s gccl.Stream) error {
	drv := driverOf(x.dev)
	return x.dev.Do(func() error { return drv.MemcpyDtoDAsync(dst, src, n, cuda.Stream(s)) })
}

// run enqueues the rank's work: the all-reduce's input copied in on s2,
// then the group (the all-reduce and the receive from the previous rank
// on s1, the send to the next rank and an all-gather on s2), then a copy
// of the all-reduce's result on s2.
func (x *streamsRank) run() error {
	cm, n, r := x.cm, x.cm.Count(), x.cm.Rank()
	if err := x.copyAsync(x.in, x.staged, 4*severalAllReduce, x.s2); err != nil {
		return err
	}
	g := group.New()
	g.AllReduce(cm, x.in, x.out, severalAllReduce, gccl.Float32, gccl.Sum, x.s1)
	g.Send(cm, x.send, severalP2P, gccl.Int32, (r+1)%n, x.s2)
	g.Recv(cm, x.recv, severalP2P, gccl.Int32, (r+n-1)%n, x.s1)
	g.AllGather(cm, x.gatherIn, x.gatherOut, severalGather, gccl.Uint8, x.s2)
	if err := g.End(); err != nil {
		return fmt.Errorf("End: %w", err)
	}
	return x.copyAsync(x.copied, x.out, 4*severalAllReduce, x.s2)
}

// poison sets every output to harness.Poison (the device idle).
func (x *streamsRank) poison() error {
	for _, o := range x.outputs {
		if err := device.Memset(x.dev, o[0], harness.Poison, int(o[1])); err != nil {
			return err
		}
	}
	return nil
}

// wait waits for s2 and checks the copy made there, which waited for the
// group, then waits for s1 and checks everything. (A graph launched on s1
// is waited for there.)
func (x *streamsRank) wait() error {
	if err := mpiboot.Wait(x.dev, x.s2, 0); err != nil {
		return err
	}
	if err := x.checks[1](); err != nil {
		return err
	}
	return x.waitAll()
}

// waitAll waits for s1 and s2 and checks everything.
func (x *streamsRank) waitAll() error {
	for _, s := range []gccl.Stream{x.s1, x.s2} {
		if err := mpiboot.Wait(x.dev, s, 0); err != nil {
			return err
		}
	}
	return errors.Join(x.cm.AsyncError(), x.check())
}

// TestGroupSeveralStreams: one communicator's operations in one group on
// two streams (NCCL >= 2.20; before issue 16 the GPU backend refused the
// second stream). The launch waits for what the other stream ran before
// it (the all-reduce's input is copied in there, behind a gate the test
// opens only after checking that the launch has not run), and work
// enqueued later on the other stream sees the results (a copy of the
// all-reduce's output, checked before the launch's own stream is
// waited for). Then the same captured into one CUDA graph, the second
// stream forked into the capture and joined back, replayed twice; and a
// capture of one of the streams only is gccl.ErrInvalidUsage naming
// both. Random inputs, poisoned outputs, every element checked.
func TestGroupSeveralStreams(t *testing.T) {
	per := groupRanks(t)
	comms := harness.LocalComms(t, per, config(), *oneDevice)
	xs := make([]*streamsRank, per)
	for i, cm := range comms {
		xs[i] = newStreamsRank(t, cm, 40)
	}
	var failures []error
	fail := func(x *streamsRank, err error) {
		if err != nil {
			failures = append(failures, fmt.Errorf("rank %d: %w", x.cm.Rank(), err))
		}
	}
	t.Run("eager", func(t *testing.T) {
		for _, x := range xs {
			err := x.gate.close(x.s2)
			if err == nil {
				err = x.run()
			}
			fail(x, err)
		}
		time.Sleep(200 * time.Millisecond)
		for _, x := range xs {
			done, err := x.dev.Query(x.s1)
			if err == nil && done {
				err = errors.New("the launch ran before the work enqueued earlier on its other stream")
			}
			fail(x, err)
		}
		for _, x := range xs {
			x.gate.open()
		}
		for _, x := range xs {
			fail(x, x.wait())
		}
	})
	if !harness.Agree(t, failures) {
		return
	}
	t.Run("captured", func(t *testing.T) {
		execs := make([]cuda.GraphExec, per)
		for i, x := range xs {
			fail(x, x.captureMismatch())
			execs[i] = x.capture(t)
		}
		for replay := range 2 {
			for _, x := range xs {
				fail(x, x.poison())
			}
			for i, x := range xs {
				fail(x, x.dev.Do(func() error { return driverOf(x.dev).GraphLaunch(execs[i], cuda.Stream(x.s1)) }))
			}
			for _, x := range xs {
				if err := x.waitAll(); err != nil {
					fail(x, fmt.Errorf("replay %d: %w", replay, err))
				}
			}
		}
	})
	harness.Agree(t, failures)
}

// captureMismatch checks that a group on s1 and s2 while only s1 is being
// captured is gccl.ErrInvalidUsage naming both streams.
func (x *streamsRank) captureMismatch() error {
	drv := driverOf(x.dev)
	return x.dev.Do(func() error {
		if err := drv.StreamBeginCapture(cuda.Stream(x.s1), cuda.CaptureModeRelaxed); err != nil {
			return err
		}
		cm, n, r := x.cm, x.cm.Count(), x.cm.Rank()
		g := group.New()
		g.Send(cm, x.send, 1, gccl.Int32, (r+1)%n, x.s2)
		g.Recv(cm, x.recv, 1, gccl.Int32, (r+n-1)%n, x.s1)
		endErr := g.End()
		graph, err := drv.StreamEndCapture(cuda.Stream(x.s1))
		if err != nil {
			return fmt.Errorf("ending the capture: %w", err)
		}
		_ = drv.GraphDestroy(graph)
		switch {
		case !errors.Is(endErr, gccl.ErrInvalidUsage):
			return fmt.Errorf("a group on a captured and an uncaptured stream: got %v, want gccl.ErrInvalidUsage", endErr)
		case !strings.Contains(endErr.Error(), fmt.Sprintf("%#x", uintptr(x.s1))) || !strings.Contains(endErr.Error(), fmt.Sprintf("%#x", uintptr(x.s2))):
			return fmt.Errorf("the error does not name both streams %#x and %#x: %v", x.s1, x.s2, endErr)
		}
		return x.cm.AsyncError()
	})
}

// capture records run into a graph on s1, s2 forked into the capture
// before and joined back after.
func (x *streamsRank) capture(t *testing.T) cuda.GraphExec {
	drv := driverOf(x.dev)
	var ev cuda.Event
	require.NoError(t, x.dev.Do(func() (err error) {
		ev, err = drv.EventCreate(cuda.EventDisableTiming)
		return err
	}))
	t.Cleanup(func() { _ = x.dev.Do(func() error { return drv.EventDestroy(ev) }) })
	link := func(from, to gccl.Stream) error {
		if err := drv.EventRecord(ev, cuda.Stream(from)); err != nil {
			return err
		}
		return drv.StreamWaitEvent(cuda.Stream(to), ev)
	}
	return capture(t, x.dev, x.s1, func() error {
		if err := link(x.s1, x.s2); err != nil { // fork
			return err
		}
		if err := x.run(); err != nil {
			return err
		}
		return link(x.s2, x.s1) // join
	})
}
