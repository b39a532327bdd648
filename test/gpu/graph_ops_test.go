package gpu

import (
	"bytes"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/graph"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

var (
	replays     = flag.Int("gccl.replays", 1000, "replays of every captured graph in TestGraphEveryOperation")
	captureMode = flag.String("gccl.capture", "relaxed", "capture mode of TestGraphEveryOperation: global, thread or relaxed")
)

// mode is -gccl.capture as a cuda.CaptureMode.
func mode() cuda.CaptureMode {
	switch *captureMode {
	case "global":
		return cuda.CaptureModeGlobal
	case "thread":
		return cuda.CaptureModeThreadLocal
	}
	return cuda.CaptureModeRelaxed
}

// Element counts: one-shot sized buffers for every graph, and
// pipelined-size all-reduce, all-gather and reduce-scatter (past the push
// kernel: with graph registration on, the default, they run zero-copy on
// buffers registered for the graph).
const (
	graphSmall = 1000
	graphBig   = 300_001
)

// graphIn is a device input buffer that holds fresh random values before
// every replay: rank r's values for replay i come from (key, i, r) alone, so
// every rank computes every rank's input without communicating.
type graphIn struct {
	p     uintptr
	t     gccl.DataType
	count int
	key   uint64
}

// all returns every rank's values for replay i.
func (in graphIn) all(i, nranks int) [][]byte {
	out := make([][]byte, nranks)
	var wg sync.WaitGroup
	for r := range nranks {
		wg.Go(func() { out[r] = harness.Input(in.key<<32|uint64(i), r, in.t, in.count) })
	}
	wg.Wait()
	return out
}

// graphOut is a device output buffer, poisoned before every replay and
// checked after it against want, which gets the values of every input of
// the case (vals[input][rank]) and returns nil where the output is
// undefined on this rank.
type graphOut struct {
	p      uintptr
	t      gccl.DataType
	poison []byte
	exact  bool // a copy: compare bytes; else a reduction: reduce.Check
	want   func(vals [][][]byte) []byte
}

// graphCase is the operation (or group) captured into one graph.
type graphCase struct {
	name   string
	ins    []graphIn
	outs   []graphOut
	launch func() error
	// big: past the push kernel, so with graph registration on (the
	// default) the captured collective runs zero-copy on buffers
	// registered for the graph.
	big bool
}

// graphRig holds the communicator, its device, buffers and stream.
type graphRig struct {
	cm      *comm.Comm
	dev     device.Device
	bufs    *harness.Buffers
	s       gccl.Stream
	rank, n int
	keys    uint64
}

func (g *graphRig) in(t gccl.DataType, count int) graphIn {
	g.keys++
	return graphIn{p: g.bufs.Alloc(count*t.Size(), nil), t: t, count: count, key: g.keys}
}

func (g *graphRig) out(t gccl.DataType, count int, exact bool, want func([][][]byte) []byte) graphOut {
	n := count * t.Size()
	return graphOut{p: g.bufs.Alloc(n, nil), t: t, poison: harness.PoisonBytes(n), exact: exact, want: want}
}

// sumOf is the expected all-reduce of input k.
func sumOf(k int, t gccl.DataType, op gccl.RedOp) func([][][]byte) []byte {
	return func(v [][][]byte) []byte { return reduce.Reference(v[k], t, op, 0) }
}

// fromRank is the expected copy of rank r's input k.
func fromRank(k, r int) func([][][]byte) []byte {
	return func(v [][][]byte) []byte { return v[k][r] }
}

func (g *graphRig) allReduce(count int) graphCase {
	in := g.in(gccl.Float32, count)
	out := g.out(gccl.Float32, count, false, sumOf(0, gccl.Float32, gccl.Sum))
	return graphCase{name: fmt.Sprintf("allreduce float32 sum count=%d", count),
		ins: []graphIn{in}, outs: []graphOut{out},
		launch: func() error { return coll.AllReduce(g.cm, in.p, out.p, count, gccl.Float32, gccl.Sum, g.s) }}
}

func (g *graphRig) broadcast(root int) graphCase {
	in := g.in(gccl.Float64, graphSmall)
	out := g.out(gccl.Float64, graphSmall, true, fromRank(0, root))
	return graphCase{name: fmt.Sprintf("broadcast float64 count=%d root=%d", graphSmall, root),
		ins: []graphIn{in}, outs: []graphOut{out},
		launch: func() error { return coll.Broadcast(g.cm, in.p, out.p, graphSmall, gccl.Float64, root, g.s) }}
}

func (g *graphRig) reduceMax(root int) graphCase {
	in := g.in(gccl.Int32, graphSmall)
	out := g.out(gccl.Int32, graphSmall, false, func(v [][][]byte) []byte {
		if g.rank != root {
			return nil // recvbuff is only used on the root
		}
		return reduce.Reference(v[0], gccl.Int32, gccl.Max, 0)
	})
	return graphCase{name: fmt.Sprintf("reduce int32 max count=%d root=%d", graphSmall, root),
		ins: []graphIn{in}, outs: []graphOut{out},
		launch: func() error {
			return coll.Reduce(g.cm, in.p, out.p, graphSmall, gccl.Int32, gccl.Max, root, g.s)
		}}
}

// allGather: count is per rank, recvbuff holds n×count.
func (g *graphRig) allGather(count int) graphCase {
	in := g.in(gccl.BFloat16, count)
	out := g.out(gccl.BFloat16, g.n*count, true, func(v [][][]byte) []byte { return bytes.Join(v[0], nil) })
	return graphCase{name: fmt.Sprintf("allgather bfloat16 count=%d", count),
		ins: []graphIn{in}, outs: []graphOut{out},
		launch: func() error { return coll.AllGather(g.cm, in.p, out.p, count, gccl.BFloat16, g.s) }}
}

// reduceScatter: count is the per-rank output, sendbuff holds n×count.
func (g *graphRig) reduceScatter(count int) graphCase {
	in := g.in(gccl.Int32, g.n*count)
	block := count * gccl.Int32.Size()
	out := g.out(gccl.Int32, count, false, func(v [][][]byte) []byte {
		return reduce.Reference(v[0], gccl.Int32, gccl.Sum, 0)[g.rank*block : (g.rank+1)*block]
	})
	return graphCase{name: fmt.Sprintf("reducescatter int32 sum count=%d", count),
		ins: []graphIn{in}, outs: []graphOut{out},
		launch: func() error {
			return coll.ReduceScatter(g.cm, in.p, out.p, count, gccl.Int32, gccl.Sum, g.s)
		}}
}

// ring returns this rank's ring neighbours: it sends to next and receives
// from prev.
func (g *graphRig) ring() (next, prev int) { return (g.rank + 1) % g.n, (g.rank - 1 + g.n) % g.n }

func (g *graphRig) ringShift() graphCase {
	next, prev := g.ring()
	in := g.in(gccl.Float32, graphSmall)
	out := g.out(gccl.Float32, graphSmall, true, fromRank(0, prev))
	return graphCase{name: fmt.Sprintf("p2p ring shift float32 count=%d", graphSmall),
		ins: []graphIn{in}, outs: []graphOut{out},
		launch: func() error {
			gr := group.New()
			gr.Send(g.cm, in.p, graphSmall, gccl.Float32, next, g.s)
			gr.Recv(g.cm, out.p, graphSmall, gccl.Float32, prev, g.s)
			return gr.End()
		}}
}

func (g *graphRig) groupMixed() graphCase {
	next, prev := g.ring()
	arIn, p2pIn := g.in(gccl.Float32, graphSmall), g.in(gccl.Int64, graphSmall)
	arOut := g.out(gccl.Float32, graphSmall, false, sumOf(0, gccl.Float32, gccl.Sum))
	p2pOut := g.out(gccl.Int64, graphSmall, true, fromRank(1, prev))
	return graphCase{name: fmt.Sprintf("group allreduce float32 + ring shift int64 count=%d", graphSmall),
		ins: []graphIn{arIn, p2pIn}, outs: []graphOut{arOut, p2pOut},
		launch: func() error {
			gr := group.New()
			gr.AllReduce(g.cm, arIn.p, arOut.p, graphSmall, gccl.Float32, gccl.Sum, g.s)
			gr.Recv(g.cm, p2pOut.p, graphSmall, gccl.Int64, prev, g.s)
			gr.Send(g.cm, p2pIn.p, graphSmall, gccl.Int64, next, g.s)
			return gr.End()
		}}
}

// cases are the graphs of TestGraphEveryOperation; the roots of Broadcast
// and Reduce rotate with the case's position.
func (g *graphRig) cases() []func() graphCase {
	return []func() graphCase{
		func() graphCase { return g.allReduce(graphSmall) },
		func() graphCase { c := g.allReduce(graphBig); c.big = true; return c },
		func() graphCase { return g.broadcast(2 % g.n) },
		func() graphCase { return g.reduceMax(3 % g.n) },
		func() graphCase { return g.allGather(graphSmall) },
		func() graphCase { c := g.allGather(2 * graphBig); c.big = true; return c },
		func() graphCase { return g.reduceScatter(graphSmall) },
		func() graphCase { c := g.reduceScatter(graphBig); c.big = true; return c },
		g.ringShift,
		g.groupMixed,
	}
}

// captureGraph records one call of launch on s (-gccl.capture mode) and
// instantiates it; capture always ends, so s is usable after a failure.
func captureGraph(dev *device.CUDADevice, s gccl.Stream, launch func() error) (cuda.GraphExec, error) {
	drv := driverOf(dev)
	var exec cuda.GraphExec
	err := dev.Do(func() error {
		if err := drv.StreamBeginCapture(cuda.Stream(s), mode()); err != nil {
			return err
		}
		lerr := launch()
		gr, err := drv.StreamEndCapture(cuda.Stream(s))
		if lerr != nil || err != nil {
			if err == nil {
				_ = drv.GraphDestroy(gr)
			}
			return fmt.Errorf("capturing: launch: %v; end capture: %v", lerr, err)
		}
		defer drv.GraphDestroy(gr)
		exec, err = drv.GraphInstantiate(gr)
		return err
	})
	return exec, err
}

// replay runs replay i of c: fresh inputs, poisoned outputs, one call of
// run (the graph's launch), a wait with MPI progress, and every element of
// every output checked (the host reference is computed while it runs).
func (g *graphRig) replay(c *graphCase, run func() error, i int) error {
	vals := make([][][]byte, len(c.ins))
	for k, in := range c.ins {
		vals[k] = in.all(i, g.n)
		if err := g.dev.CopyIn(in.p, vals[k][g.rank]); err != nil {
			return err
		}
	}
	for _, o := range c.outs {
		if err := g.dev.CopyIn(o.p, o.poison); err != nil {
			return err
		}
	}
	if err := run(); err != nil {
		return err
	}
	wants := make([][]byte, len(c.outs))
	for k, o := range c.outs {
		wants[k] = o.want(vals)
	}
	if err := mpiboot.Wait(g.dev, g.s, 0); err != nil {
		return err
	}
	if err := g.cm.AsyncError(); err != nil {
		return err
	}
	for k, o := range c.outs {
		if wants[k] == nil {
			continue
		}
		got := make([]byte, len(o.poison))
		if err := g.dev.CopyOut(got, o.p); err != nil {
			return err
		}
		if err := compareOutput(got, wants[k], o, g.n); err != nil {
			return fmt.Errorf("output %d: %w", k, err)
		}
	}
	return nil
}

// compareOutput checks copies byte for byte and reductions with
// reduce.Check's tolerance.
func compareOutput(got, want []byte, o graphOut, nranks int) error {
	if !o.exact {
		return reduce.Check(got, want, o.t, nranks)
	}
	if len(got) != len(want) {
		return fmt.Errorf("got %d bytes, want %d", len(got), len(want))
	}
	size := o.t.Size()
	for i := 0; i < len(got); i += size {
		if !bytes.Equal(got[i:i+size], want[i:i+size]) {
			return fmt.Errorf("element %d of %v: got bytes % x, want % x", i/size, o.t, got[i:i+size], want[i:i+size])
		}
	}
	return nil
}

// runGraphCase captures c once and replays it -gccl.replays times; every
// rank agrees after the capture and after every replay, so all of them
// stop at the same point when any fails.
func (g *graphRig) runGraphCase(t *testing.T, dev *device.CUDADevice, c graphCase) {
	before := engineStats(g.cm)
	exec, err := captureGraph(dev, g.s, c.launch)
	if !harness.Agree(t, errList(err, "capture")) {
		return
	}
	after := engineStats(g.cm)
	zc := after.ZeroCopyOps - before.ZeroCopyOps
	t.Logf("captured: %d zero-copy ops, %d bytes staged per replay", zc, after.StagedBytes-before.StagedBytes)
	if c.big && g.n > 1 && graph.RegisterEnabled() && zc != 1 { // one rank: a copy node
		err = fmt.Errorf("%s captured with graph registration on ran %d zero-copy ops, want 1", c.name, zc)
	}
	if !harness.Agree(t, errList(err, "graph registration")) {
		return
	}
	t.Cleanup(func() { _ = dev.Do(func() error { return driverOf(dev).GraphExecDestroy(exec) }) })
	launch := func() error {
		return dev.Do(func() error { return driverOf(dev).GraphLaunch(exec, cuda.Stream(g.s)) })
	}
	for i := range *replays {
		if !harness.Agree(t, errList(g.replay(&c, launch, i), fmt.Sprintf("rank %d replay %d", g.rank, i))) {
			return
		}
	}
}

func errList(err error, what string) []error {
	if err == nil {
		return nil
	}
	return []error{fmt.Errorf("%s: %w", what, err)}
}

// TestGraphEveryOperation captures each collective (all-reduce at a
// one-shot and a pipelined size, broadcast, reduce, all-gather,
// reduce-scatter), a p2p ring shift and a group of an all-reduce and a ring
// shift into its own graph, then replays every graph -gccl.replays times
// (default 1000) with fresh random inputs and poisoned outputs before each
// replay, checking every element of every output after it.
func TestGraphEveryOperation(t *testing.T) {
	cm := world(t)
	dev, ok := cm.Device().(*device.CUDADevice)
	require.True(t, ok, "world's device is %T, want *device.CUDADevice", cm.Device())
	if *replays < 1 {
		t.Fatalf("-gccl.replays=%d: want at least 1", *replays)
	}
	bufs := harness.NewBuffers(t, dev)
	g := &graphRig{cm: cm, dev: dev, bufs: bufs, s: bufs.Stream(), rank: cm.Rank(), n: cm.Count()}
	for _, mk := range g.cases() {
		c := mk()
		if !t.Run(c.name, func(t *testing.T) { g.runGraphCase(t, dev, c) }) {
			return
		}
	}
}

// engineStats is the counters of cm's engine (zero when cm takes no operations).
func engineStats(cm *comm.Comm) engine.Stats {
	e, err := commlink.Engine(cm)
	if err != nil {
		return engine.Stats{}
	}
	return e.Stats()
}
