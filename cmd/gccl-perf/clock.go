package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
)

// hostRunner is a library that runs one operation to completion and times
// it on the host (gccl on the host backend, MPI).
type hostRunner interface {
	Run(c call) (time.Duration, error)
}

// streamLauncher is a library that enqueues one operation on the run's
// CUDA stream and returns without waiting (gccl on a GPU, NCCL). Launch is
// called with the device's context current on the calling OS thread.
type streamLauncher interface {
	Launch(c call) error
}

// clock runs one library's checked run, warm-up and timed iterations on
// one rank. Every library of a run is timed by the same clock.
type clock interface {
	// once runs c to completion, as the timed iterations run it (eagerly or
	// as a CUDA graph), for the checked run.
	once(lib library, c call) error
	// times runs the warm-up, then returns one per-operation time per
	// sample (samples() of them).
	times(lib library, c call, size int64) ([]time.Duration, error)
	samples() int
	// describe says how the clock times, for the table's title.
	describe() string
	Close() error
}

// newClock picks the clock of the device: host timing on the host
// backend, CUDA events (eager or through a graph) on a GPU.
func newClock(cfg config, d device.Device, s gccl.Stream) (clock, error) {
	if d.Kind() == device.Host {
		if cfg.graph {
			return nil, graphError(d.Kind())
		}
		return hostClock{warmup: cfg.warmup, iters: cfg.iters}, nil
	}
	gpu, ok := d.(*device.CUDADevice)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidUsage, "device", "gccl-perf cannot time a %v device (%T)", d.Kind(), d)
	}
	t, err := newEventTimer(gpu, s, cfg.timeout)
	if err != nil {
		return nil, err
	}
	if cfg.graph {
		return &graphClock{t: t, warmup: cfg.warmup, ops: cfg.iters, launches: cfg.launches}, nil
	}
	return &eventClock{t: t, warmup: cfg.warmup, iters: cfg.iters, batch: cfg.batch}, nil
}

// graphError says why -graph cannot run on this device.
func graphError(k device.Kind) error {
	return gccl.Errorf(gccl.InvalidUsage, "-graph", "CUDA graph launch is not supported on %v (this run's device); drop -graph", k)
}

// hostClock times each iteration on the host, from launch to completion.
type hostClock struct{ warmup, iters int }

func (h hostClock) once(lib library, c call) error {
	r, err := runnerOf(lib)
	if err != nil {
		return err
	}
	_, err = r.Run(c)
	return err
}

func (h hostClock) times(lib library, c call, size int64) ([]time.Duration, error) {
	r, err := runnerOf(lib)
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

func (h hostClock) samples() int     { return h.iters }
func (h hostClock) describe() string { return "host-timed" }
func (h hostClock) Close() error     { return nil }

func runnerOf(lib library) (hostRunner, error) {
	if r, ok := lib.(hostRunner); ok {
		return r, nil
	}
	return nil, gccl.Errorf(gccl.InvalidUsage, lib.Name(), "%s runs on GPU streams only, not on the host backend", lib.Name())
}

func launcherOf(lib library) (streamLauncher, error) {
	if l, ok := lib.(streamLauncher); ok {
		return l, nil
	}
	return nil, gccl.Errorf(gccl.InvalidUsage, lib.Name(), "%s cannot launch on a CUDA stream; it runs on the host backend only", lib.Name())
}

// repeat returns a launch function that enqueues c n times back to back.
func repeat(l streamLauncher, c call, n int) func() error {
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

// batchFor is the number of operations timed between one pair of events at
// size bytes: the -batch flag, or automatically ceil(1 MiB / size) up to
// 32, so that tiny operations run back to back as in nccl-tests (one
// operation alone between two events would time the host's launch).
func batchFor(flag int, size int64) int {
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
	t             *eventTimer
	warmup, iters int
	batch         int // -batch (0: automatic)
}

func (k *eventClock) once(lib library, c call) error {
	l, err := launcherOf(lib)
	if err != nil {
		return err
	}
	_, err = k.t.time(repeat(l, c, 1))
	return err
}

func (k *eventClock) times(lib library, c call, size int64) ([]time.Duration, error) {
	l, err := launcherOf(lib)
	if err != nil {
		return nil, err
	}
	if k.warmup > 0 {
		if _, err := k.t.time(repeat(l, c, k.warmup)); err != nil {
			return nil, err
		}
	}
	b := batchFor(k.batch, size)
	out := make([]time.Duration, 0, k.iters)
	for range k.iters {
		d, err := k.t.time(repeat(l, c, b))
		if err != nil {
			return nil, err
		}
		out = append(out, d/time.Duration(b))
	}
	return out, nil
}

func (k *eventClock) samples() int { return k.iters }
func (k *eventClock) describe() string {
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
	t                     *eventTimer
	warmup, ops, launches int
}

func (k *graphClock) once(lib library, c call) error {
	l, err := launcherOf(lib)
	if err != nil {
		return err
	}
	exec, err := k.t.capture(repeat(l, c, 1))
	if err != nil {
		return err
	}
	_, err = k.t.time(k.t.launchGraph(exec))
	return errors.Join(err, k.t.destroyGraph(exec))
}

func (k *graphClock) times(lib library, c call, size int64) (out []time.Duration, err error) {
	l, err := launcherOf(lib)
	if err != nil {
		return nil, err
	}
	if k.warmup > 0 { // the same eager warm-up as without -graph
		if _, err := k.t.time(repeat(l, c, k.warmup)); err != nil {
			return nil, err
		}
	}
	exec, err := k.t.capture(repeat(l, c, k.ops))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, k.t.destroyGraph(exec)) }()
	launch := k.t.launchGraph(exec)
	if _, err := k.t.time(launch); err != nil {
		return nil, err
	}
	out = make([]time.Duration, 0, k.launches)
	for range k.launches {
		d, err := k.t.time(launch)
		if err != nil {
			return nil, err
		}
		out = append(out, d/time.Duration(k.ops))
	}
	return out, nil
}

func (k *graphClock) samples() int { return k.launches }
func (k *graphClock) describe() string {
	return fmt.Sprintf("CUDA events, graph of %d ops x %d launches", k.ops, k.launches)
}
func (k *graphClock) Close() error { return k.t.Close() }
