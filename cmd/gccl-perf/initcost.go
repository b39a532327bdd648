package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/arena"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/layout"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/perf"
)

// initCost is what creating one library's communicator cost one rank: the
// wall time of the init and, on a GPU, the device memory it took, at init
// and after the library's first operations (some libraries, NCCL among
// them, allocate buffers lazily on first use). -1 bytes: not measured
// (the host backend, or no first operation could run).
type initCost struct {
	took     time.Duration
	memInit  int64
	memFirst int64
}

// unmeasured is an initCost with no memory figures yet.
var unmeasured = initCost{memInit: -1, memFirst: -1}

// initCoster is a baseline that measured its own communicator's init.
type initCoster interface {
	initCost() initCost
}

// memMeter reads one GPU's free memory (cuMemGetInfo) in the device's
// primary context; a nil *memMeter is the host backend's, which reads
// nothing. cuMemGetInfo counts the whole device, every process on it, so
// the deltas are the library's only while nothing else allocates there.
type memMeter struct{ dev *device.CUDADevice }

// meterOf is d's meter: nil unless d is a GPU.
func meterOf(d device.Device) *memMeter {
	if gpu, ok := d.(*device.CUDADevice); ok {
		return &memMeter{dev: gpu}
	}
	return nil
}

// free synchronizes the context (so that memory the library allocates
// asynchronously is in) and returns the device's free bytes.
func (m *memMeter) free() (int64, error) {
	if m == nil {
		return 0, nil
	}
	var free int
	err := m.dev.Do(func() error {
		drv := gpuDriver(m.dev)
		if err := drv.CtxSynchronize(); err != nil {
			return err
		}
		f, _, err := drv.MemGetInfo()
		free = f
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reading the free memory of GPU %d: %w", m.dev.Ordinal(), err)
	}
	return int64(free), nil
}

// sync waits until the device's context is idle.
func (m *memMeter) sync() error {
	if m == nil {
		return nil
	}
	return m.dev.Do(gpuDriver(m.dev).CtxSynchronize)
}

// timeInit runs init and returns its wall time (up to the context being
// idle, on a GPU) and the drop in free device memory across it (m nil:
// not measured). The caller has made the device's context already, so
// that the context's own memory is not counted.
func timeInit(m *memMeter, init func() error) (initCost, error) {
	cost := unmeasured
	before, err := m.free()
	if err != nil {
		return cost, err
	}
	start := time.Now()
	if err := init(); err != nil {
		return cost, err
	}
	if err := m.sync(); err != nil {
		return cost, fmt.Errorf("waiting for the GPU after the init: %w", err)
	}
	cost.took = time.Since(start)
	if m != nil {
		after, err := m.free()
		if err != nil {
			return cost, err
		}
		cost.memInit = before - after
	}
	return cost, nil
}

// openMeter opens device ordinal as gccl's communicator will (device.Auto)
// and, when it is a GPU, returns its meter: opening retains the primary
// context, so the context exists before the init is measured and its own
// memory is not charged to the library. On the host it returns nil. close
// releases what was opened (call it after the communicator is closed).
func openMeter(ordinal int) (m *memMeter, close func() error, err error) {
	d, err := device.Open(device.Auto, ordinal)
	if err != nil {
		return nil, nil, fmt.Errorf("opening device %d to measure the init: %w", ordinal, err)
	}
	closer, _ := d.(io.Closer)
	close = func() error {
		if closer == nil {
			return nil
		}
		return closer.Close()
	}
	return meterOf(d), close, nil
}

// firstOps runs lib's first operations on m's device and adds the device
// memory they took to cost.memInit as cost.memFirst: run is called with
// the device idle and must leave its allocations in place (the sweep
// memory it uses is allocated before, so it is not counted).
func firstOps(m *memMeter, cost initCost, run func() error) (initCost, error) {
	if m == nil || cost.memInit < 0 {
		return cost, nil
	}
	before, err := m.free()
	if err != nil {
		return cost, err
	}
	if err := run(); err != nil {
		return cost, err
	}
	after, err := m.free()
	if err != nil {
		return cost, err
	}
	cost.memFirst = cost.memInit + before - after
	return cost, nil
}

// firstOp is what the first-op measurement runs: the run's first operation
// that can run with this configuration (a layout exists, the root is a
// rank, the baseline supports it), at the smallest and the largest size of
// its sweep; ok is false when no operation can.
func (r *ranker) firstOp() (op perf.Op, sizes []int64, ok bool) {
	for _, op := range r.cfg.ops {
		if op.Rooted() && r.cfg.root >= r.nranks {
			continue
		}
		if _, err := layout.New(op, 0, r.cfg.dtype, r.rank, r.nranks, r.cfg.inplace); err != nil {
			continue
		}
		if r.base != nil && r.base.Supports(op, r.cfg.dtype, r.cfg.redop, r.cfg.inplace) != nil {
			continue
		}
		all, err := r.cfg.sizes(op, r.nranks)
		if err != nil || len(all) == 0 {
			continue
		}
		if len(all) == 1 {
			return op, all, true
		}
		return op, []int64{all[0], all[len(all)-1]}, true
	}
	return "", nil, false
}

// measureFirstOps runs, on a GPU, each library's first operations
// (firstOp, unchecked, as the clock runs them) on memory allocated before
// any is measured, and sets costs[i].memFirst of libs[i]. On the host, or
// when no operation can run, the costs are left as they are.
func (r *ranker) measureFirstOps(libs []lib.Library, costs []initCost) (err error) {
	m := meterOf(r.dev)
	op, sizes, ok := r.firstOp()
	if m == nil || !ok || costs[0].memInit < 0 { // gccl's init unmeasured: a shared GPU
		return nil
	}
	bytes, err := r.arenaBytes(op, sizes)
	if err != nil {
		return err
	}
	mem, err := arena.New(r.dev, bytes, false, nil, nil)
	if err != nil {
		return fmt.Errorf("first operations: %w", err)
	}
	defer func() { err = errors.Join(err, mem.Free()) }()
	for i, library := range libs {
		costs[i], err = firstOps(m, costs[i], func() error {
			for _, size := range sizes {
				c, _, err := r.callAt(op, size, mem.Base)
				if err != nil {
					return err
				}
				if err := r.clk.Once(library, c); err != nil {
					return fmt.Errorf("%s: first %s at %d bytes: %w", library.Name(), op, size, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// closeAll runs every close, joining their errors.
func closeAll(closes []func() error) error {
	var errs []error
	for _, c := range closes {
		if c != nil {
			errs = append(errs, c())
		}
	}
	return errors.Join(errs...)
}

// gpuDriver is the CUDA driver that dev calls.
func gpuDriver(dev *device.CUDADevice) cuda.Driver {
	drv, _ := devlink.Driver(dev)
	return drv
}
