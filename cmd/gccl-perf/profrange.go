package main

import (
	"errors"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
)

// profRange brackets each library's warm-up and timed iterations at each size in a CUDA
// profiler range (-profilerange): `ncu --replay-mode app-range` then
// measures the timed work of every rank as one range, kernels running side
// by side as they do unprofiled (kernel replay serialises kernels, and
// ranks whose kernels wait for each other hang under it), and `nsys
// --capture-range=cudaProfilerApi` records only the timed work.
type profRange struct {
	dev *device.CUDADevice
	drv cuda.Driver
	x   exchange.Exchanger
}

// newProfRange is the run's profiler range on d, nil without -profilerange.
func newProfRange(cfg config, d device.Device, x exchange.Exchanger) (*profRange, error) {
	if !cfg.profRange {
		return nil, nil
	}
	gpu, ok := d.(*device.CUDADevice)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidUsage, "-profilerange", "a CUDA profiler range needs a GPU run, this run's device is %v; drop -profilerange", d.Kind())
	}
	drv, _ := devlink.Driver(gpu)
	return &profRange{dev: gpu, drv: drv, x: x}, nil
}

// around runs timed inside the range. Every rank reaches the start before
// any opens it (ranks that share a context share its range), and none
// closes it before every rank's timed work has completed (timed returns
// once its last event has).
func (p *profRange) around(timed func() error) error {
	if p == nil {
		return timed()
	}
	if _, err := p.x.Allgather([]byte{1}); err != nil {
		return err
	}
	if err := p.dev.Do(p.drv.ProfilerStart); err != nil {
		return err
	}
	err := timed()
	if err == nil {
		_, err = p.x.Allgather([]byte{1})
	}
	return errors.Join(err, p.dev.Do(p.drv.ProfilerStop))
}
