package main

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
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
func newMPIComm(cfg config, gpu int, m *memMeter) (*comm.Comm, initCost, error) {
	id, err := mpiboot.ShareUniqueID()
	if err != nil {
		return nil, unmeasured, err
	}
	if err := mpiboot.Barrier(); err != nil {
		return nil, unmeasured, err
	}
	rank, size := mpiboot.World()
	var c *comm.Comm
	cost, err := timeInit(m, func() (err error) {
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
func mpiDevice(cfg config) (gpu int, m *memMeter, close func() error, err error) {
	gpu = mpiboot.LocalRank()
	if cfg.device >= 0 {
		gpu = cfg.device
		if mpiboot.LocalSize() > 1 {
			return gpu, nil, func() error { return nil }, nil
		}
	}
	m, close, err = openMeter(gpu)
	return gpu, m, close, err
}

// newLocalComms creates the cfg.np goroutine ranks of gccl's communicator
// (rank r on device r, as comm.InitAllN, or every rank on device
// cfg.device), each init timed and measured on its device. closeMeters releases the meters' devices; call it after
// the communicators are closed. If a rank fails, every rank is aborted.
func newLocalComms(cfg config) (comms []*comm.Comm, costs []initCost, closeMeters func() error, err error) {
	n := cfg.np
	id, err := comm.NewUniqueID()
	if err != nil {
		return nil, nil, nil, err
	}
	meters, closes := make([]*memMeter, n), make([]func() error, n)
	closeMeters = func() error { return closeAll(closes) }
	// Ranks sharing one GPU in this process share its context: a meter's
	// cuCtxSynchronize would wait for another rank's kernel, which waits
	// for this rank, so their memory is not measured.
	for r := range n {
		if cfg.device >= 0 && n > 1 {
			break
		}
		if meters[r], closes[r], err = openMeter(localDevice(cfg, r)); err != nil {
			return nil, nil, nil, errors.Join(err, closeMeters())
		}
	}
	comms, costs = make([]*comm.Comm, n), make([]initCost, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			costs[r], errs[r] = timeInit(meters[r], func() (err error) {
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

// initCosts measures, on a GPU, the first operations of gccl and of a
// baseline that measured its own init (NCCL), then agrees with the other
// ranks on every library's init cost. gcclCost is this rank's gccl init.
func (r *ranker) initCosts(gcclCost initCost) (initSummary, error) {
	libs, costs := []lib.Library{r.gccl}, []initCost{gcclCost}
	base, baseName := initCost{took: -1}, ""
	if ic, ok := r.base.(initCoster); ok {
		libs, costs = append(libs, r.base), append(costs, ic.initCost())
		baseName = r.base.Name()
	}
	localErr := r.measureFirstOps(libs, costs)
	if len(costs) > 1 {
		base = costs[1]
	}
	sum, err := agreeInit(r.x, costs[0], base, baseName, localErr != nil)
	if localErr != nil {
		return sum, fmt.Errorf("measuring the first operations: %w", localErr)
	}
	return sum, err
}
