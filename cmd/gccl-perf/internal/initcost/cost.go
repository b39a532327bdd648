package initcost

import (
	"fmt"
	"io"
	"time"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
)

// Cost is what creating one library's communicator cost one rank: the
// wall time of the init and, on a GPU, the device memory it took, at init
// and after the library's first operations (some libraries, NCCL among
// them, allocate buffers lazily on first use). -1 bytes: not measured
// (the host backend, or no first operation could run).
type Cost struct {
	Took     time.Duration
	MemInit  int64
	MemFirst int64
}

// Unmeasured is a Cost with no memory figures yet.
var Unmeasured = Cost{MemInit: -1, MemFirst: -1}

// Measured is a baseline that measured its own communicator's init.
type Measured interface {
	InitCost() Cost
}

// Meter reads one GPU's free memory (cuMemGetInfo) in the device's
// primary context; a nil *Meter is the host backend's, which reads
// nothing. cuMemGetInfo counts the whole device, every process on it, so
// the deltas are the library's only while nothing else allocates there.
type Meter struct {
	dev *device.CUDADevice
	drv cuda.Driver
}

// MeterOf is d's meter: nil unless d is a GPU.
func MeterOf(d device.Device) *Meter {
	if gpu, ok := d.(*device.CUDADevice); ok {
		drv, _ := devlink.Driver(gpu)
		return &Meter{dev: gpu, drv: drv}
	}
	return nil
}

// free synchronizes the context (so that memory the library allocates
// asynchronously is in) and returns the device's free bytes.
func (m *Meter) free() (int64, error) {
	if m == nil {
		return 0, nil
	}
	var free int
	err := m.dev.Do(func() error {
		if err := m.drv.CtxSynchronize(); err != nil {
			return err
		}
		f, _, err := m.drv.MemGetInfo()
		free = f
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reading the free memory of GPU %d: %w", m.dev.Ordinal(), err)
	}
	return int64(free), nil
}

// sync waits until the device's context is idle.
func (m *Meter) sync() error {
	if m == nil {
		return nil
	}
	return m.dev.Do(m.drv.CtxSynchronize)
}

// Measure runs init and returns its wall time (up to the context being
// idle, on a GPU) and the drop in free device memory across it (m nil:
// not measured). The caller has made the device's context already, so
// that the context's own memory is not counted.
func Measure(m *Meter, init func() error) (Cost, error) {
	cost := Unmeasured
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
	cost.Took = time.Since(start)
	if m != nil {
		after, err := m.free()
		if err != nil {
			return cost, err
		}
		cost.MemInit = before - after
	}
	return cost, nil
}

// OpenMeter opens device ordinal as gccl's communicator will (device.Auto)
// and, when it is a GPU, returns its meter: opening retains the primary
// context, so the context exists before the init is measured and its own
// memory is not charged to the library. On the host it returns nil. close
// releases what was opened (call it after the communicator is closed).
func OpenMeter(ordinal int) (m *Meter, close func() error, err error) {
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
	return MeterOf(d), close, nil
}

// AddFirstOps runs a library's first operations on m's device and adds the
// device memory they took to cost.MemInit as cost.MemFirst: run is called with
// the device idle and must leave its allocations in place (the sweep
// memory it uses is allocated before, so it is not counted).
func AddFirstOps(m *Meter, cost Cost, run func() error) (Cost, error) {
	if m == nil || cost.MemInit < 0 {
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
	cost.MemFirst = cost.MemInit + before - after
	return cost, nil
}
