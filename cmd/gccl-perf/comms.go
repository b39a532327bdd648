package main

import (
	"errors"
	"sync"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/mpiboot"
)

// commConfig is the configuration of gccl's communicator on device
// ordinal: blocking, so that the init's time is the whole init.
func commConfig(cfg config, ordinal int) *comm.Config {
	blocking := true
	return &comm.Config{Timeout: cfg.timeout, Name: "gccl-perf", Device: ordinal, DeviceSet: true, Blocking: &blocking}
}

// newMPIComm creates this process's rank of gccl's communicator over the
// MPI job, on the GPU of its local rank, as mpiboot.NewComm does, and
// measures the init with m: rank 0's unique ID is broadcast and the ranks
// meet at a barrier first, so that the timed part is comm.InitRankConfig
// alone, started together (as the NCCL baseline's ncclCommInitRank is).
func newMPIComm(cfg config, gpu int, m *initcost.Meter) (*comm.Comm, initcost.Cost, error) {
	id, err := mpiboot.ShareUniqueID()
	if err != nil {
		return nil, initcost.Unmeasured, err
	}
	if err := mpiboot.Barrier(); err != nil {
		return nil, initcost.Unmeasured, err
	}
	rank, size := mpiboot.World()
	var c *comm.Comm
	cost, err := initcost.Measure(m, func() (err error) {
		c, err = comm.InitRankConfig(size, id, rank, commConfig(cfg, gpu))
		return err
	})
	if err != nil && c != nil {
		_ = c.Abort()
		c = nil
	}
	return c, cost, err
}

// mpiDevice is this MPI process's GPU (-device, else its local rank's) and
// the meter of its init. Processes that share one GPU (-device with more
// than one process on the host) are not metered: cuMemGetInfo counts the
// whole device, and the others allocate at the same time.
func mpiDevice(cfg config) (gpu int, m *initcost.Meter, close func() error, err error) {
	gpu = mpiboot.LocalRank()
	if cfg.device >= 0 {
		gpu = cfg.device
		if mpiboot.LocalSize() > 1 {
			return gpu, nil, func() error { return nil }, nil
		}
	}
	m, close, err = initcost.OpenMeter(gpu)
	return gpu, m, close, err
}

// newLocalComms creates the cfg.np goroutine ranks of gccl's communicator
// (rank r on device r, as comm.InitAllN, or every rank on device
// cfg.device), each init timed and measured on its device. closeMeters releases the meters' devices; call it after
// the communicators are closed. If a rank fails, every rank is aborted.
func newLocalComms(cfg config) (comms []*comm.Comm, costs []initcost.Cost, closeMeters func() error, err error) {
	n := cfg.np
	id, err := comm.NewUniqueID()
	if err != nil {
		return nil, nil, nil, err
	}
	meters, closes := make([]*initcost.Meter, n), make([]func() error, n)
	closeMeters = func() error { return closeAll(closes) }
	// Ranks sharing one GPU in this process share its context: a meter's
	// cuCtxSynchronize would wait for another rank's kernel, which waits
	// for this rank, so their memory is not measured.
	for r := range n {
		if cfg.device >= 0 && n > 1 {
			break
		}
		if meters[r], closes[r], err = initcost.OpenMeter(localDevice(cfg, r)); err != nil {
			return nil, nil, nil, errors.Join(err, closeMeters())
		}
	}
	comms, costs = make([]*comm.Comm, n), make([]initcost.Cost, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			costs[r], errs[r] = initcost.Measure(meters[r], func() (err error) {
				comms[r], err = comm.InitRankConfig(n, id, r, commConfig(cfg, localDevice(cfg, r)))
				return err
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range comms {
			if c != nil {
				_ = c.Abort()
			}
		}
		return nil, nil, nil, errors.Join(err, closeMeters())
	}
	return comms, costs, closeMeters, nil
}

// localDevice is the device of goroutine rank r: -device, else r.
func localDevice(cfg config, r int) int {
	if cfg.device >= 0 {
		return cfg.device
	}
	return r
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
