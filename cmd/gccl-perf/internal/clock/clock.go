package clock

import (
	"errors"
	"fmt"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/device"
)

// Clock runs one library's checked run, warm-up and timed iterations on
// one rank. Every library of a run is timed by the same clock.
type Clock interface {
	// Once runs c to completion, as the timed iterations run it (eagerly or
	// as a CUDA graph), for the checked run.
	Once(l lib.Library, c lib.Call) error
	// Times runs the warm-up, then returns one per-operation time per
	// sample (Samples() of them).
	Times(l lib.Library, c lib.Call, size int64) ([]time.Duration, error)
	Samples() int
	// Describe says how the clock times, for the table's title.
	Describe() string
	Close() error
}

// Settings are how a clock times: the run's -w, -n, -graph, -launches,
// -batch and -timeout.
type Settings struct {
	Warmup   int
	Iters    int // timed iterations; with Graph, the operations in the graph
	Graph    bool
	Launches int // Graph: timed launches of the graph
	Batch    int // CUDA eager: operations between one pair of events (0: automatic)
	Timeout  time.Duration
}

// New picks the clock of the device: host timing on the host backend,
// CUDA events (eager or through a graph) on a GPU.
func New(set Settings, d device.Device, s gccl.Stream) (Clock, error) {
	if d.Kind() == device.Host {
		if set.Graph {
			return nil, graphError(d.Kind())
		}
		return hostClock{warmup: set.Warmup, iters: set.Iters}, nil
	}
	gpu, ok := d.(*device.CUDADevice)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidUsage, "device", "gccl-perf cannot time a %v device (%T)", d.Kind(), d)
	}
	t, err := NewTimer(gpu, s, set.Timeout)
	if err != nil {
		return nil, err
	}
	if set.Graph {
		return &graphClock{t: t, warmup: set.Warmup, ops: set.Iters, launches: set.Launches}, nil
	}
	return &eventClock{t: t, warmup: set.Warmup, iters: set.Iters, batch: set.Batch}, nil
}

// graphError says why -graph cannot run on this device.
func graphError(k device.Kind) error {
	return gccl.Errorf(gccl.InvalidUsage, "-graph", "CUDA graph launch is not supported on %v (this run's device); drop -graph", k)
}

// hostClock times each iteration on the host, from launch to completion.
type hostClock struct{ warmup, iters int }

func (h hostClock) Once(l lib.Library, c lib.Call) error {
	r, err := runnerOf(l)
	if err != nil {
		return err
	}
	_, err = r.Run(c)
	return err
}

func (h hostClock) Times(l lib.Library, c lib.Call, size int64) ([]time.Duration, error) {
	r, err := runnerOf(l)
	if err != nil {
		return nil, err
	}
	for range h.warmup {
		if _, err := r.Run(c); err != nil {
			return nil, err
		}
	}
	out := make([]time.Duration, 0, h.iters)
	for range h.iters {
		d, err := r.Run(c)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (h hostClock) Samples() int     { return h.iters }
func (h hostClock) Describe() string { return "host-timed" }
func (h hostClock) Close() error     { return nil }

func runnerOf(l lib.Library) (lib.HostRunner, error) {
	if r, ok := l.(lib.HostRunner); ok {
		return r, nil
	}
	return nil, gccl.Errorf(gccl.InvalidUsage, l.Name(), "%s runs on GPU streams only, not on the host backend", l.Name())
}

func launcherOf(l lib.Library) (lib.StreamLauncher, error) {
	if sl, ok := l.(lib.StreamLauncher); ok {
		return sl, nil
	}
	return nil, gccl.Errorf(gccl.InvalidUsage, l.Name(), "%s cannot launch on a CUDA stream; it runs on the host backend only", l.Name())
}

// repeat returns a launch function that enqueues c n times back to back.
func repeat(l lib.StreamLauncher, c lib.Call, n int) func() error {
	return func() error {
		for range n {
			if err := l.Launch(c); err != nil {
				return err
			}
		}
		return nil
	}
}

// maxBatch bounds the automatic batch of back-to-back operations.
const maxBatch = 32

// BatchFor is the number of operations timed between one pair of events at
// size bytes: the -batch flag, or automatically ceil(1 MiB / size) up to
// 32, so that tiny operations run back to back as in nccl-tests (one
// operation alone between two events would time the host's launch).
func BatchFor(flag int, size int64) int {
	if flag > 0 {
		return flag
	}
	if size <= 0 {
		return maxBatch
	}
	return int(min(maxBatch, max(1, (1<<20+size-1)/size)))
}

// eventClock times eager launches with CUDA events: each sample is a batch
// of back-to-back operations between two events, divided by the batch.
type eventClock struct {
	t             *Timer
	warmup, iters int
	batch         int // -batch (0: automatic)
}

func (k *eventClock) Once(l lib.Library, c lib.Call) error {
	sl, err := launcherOf(l)
	if err != nil {
		return err
	}
	_, err = k.t.Time(repeat(sl, c, 1))
	return err
}

func (k *eventClock) Times(l lib.Library, c lib.Call, size int64) ([]time.Duration, error) {
	sl, err := launcherOf(l)
	if err != nil {
		return nil, err
	}
	if k.warmup > 0 {
		if _, err := k.t.Time(repeat(sl, c, k.warmup)); err != nil {
			return nil, err
		}
	}
	b := BatchFor(k.batch, size)
	out := make([]time.Duration, 0, k.iters)
	for range k.iters {
		d, err := k.t.Time(repeat(sl, c, b))
		if err != nil {
			return nil, err
		}
		out = append(out, d/time.Duration(b))
	}
	return out, nil
}

func (k *eventClock) Samples() int { return k.iters }
func (k *eventClock) Describe() string {
	if k.batch > 0 {
		return fmt.Sprintf("CUDA events, eager, batches of %d", k.batch)
	}
	return "CUDA events, eager, auto batches"
}
func (k *eventClock) Close() error { return k.t.Close() }

// graphClock captures ops operations into a CUDA graph, launches it once
// untimed (the first launch uploads it), then times launches launches
// with events; a sample is one launch's time divided by ops.
type graphClock struct {
	t                     *Timer
	warmup, ops, launches int
}

func (k *graphClock) Once(l lib.Library, c lib.Call) error {
	sl, err := launcherOf(l)
	if err != nil {
		return err
	}
	exec, err := k.t.capture(repeat(sl, c, 1))
	if err != nil {
		return err
	}
	_, err = k.t.Time(k.t.launchGraph(exec))
	return errors.Join(err, k.t.destroyGraph(exec))
}

func (k *graphClock) Times(l lib.Library, c lib.Call, size int64) (out []time.Duration, err error) {
	sl, err := launcherOf(l)
	if err != nil {
		return nil, err
	}
	if k.warmup > 0 { // the same eager warm-up as without -graph
		if _, err := k.t.Time(repeat(sl, c, k.warmup)); err != nil {
			return nil, err
		}
	}
	exec, err := k.t.capture(repeat(sl, c, k.ops))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, k.t.destroyGraph(exec)) }()
	launch := k.t.launchGraph(exec)
	if _, err := k.t.Time(launch); err != nil {
		return nil, err
	}
	out = make([]time.Duration, 0, k.launches)
	for range k.launches {
		d, err := k.t.Time(launch)
		if err != nil {
			return nil, err
		}
		out = append(out, d/time.Duration(k.ops))
	}
	return out, nil
}

func (k *graphClock) Samples() int { return k.launches }
func (k *graphClock) Describe() string {
	return fmt.Sprintf("CUDA events, graph of %d ops x %d launches", k.ops, k.launches)
}
func (k *graphClock) Close() error { return k.t.Close() }
