// Command coupling runs two coupled solvers as one MPI job: solver A and
// solver B each integrate the 2-D heat equation on their own n×n subdomain
// (A's left wall hot, the rest cold), side by side, each on its own gccl
// communicator with halo exchanges (p2p.HaloExchange) and a residual
// AllReduce every step. Every -every steps the ranks along the interface
// exchange interface columns over a third, inter-solver communicator.
// Every rank then checks its cells against a single-process run of the same
// scheme.
//
// As an MPMD job (each command is one solver, found by MPI_APPNUM):
//
//	mpirun -np 2 coupling : -np 3 coupling
//
// or one command, the first -a ranks being solver A:
//
//	mpirun -np 5 coupling -a 2 [-n 24] [-steps 600] [-every 5]
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/mpiboot"
)

func main() {
	a := flag.Int("a", 0, "ranks of solver A when not launched as MPMD (0: by MPI_APPNUM)")
	n := flag.Int("n", 24, "cells along each side of each subdomain")
	steps := flag.Int("steps", 600, "time steps")
	every := flag.Int("every", 5, "steps between interface exchanges")
	dev := flag.Int("device", -1, "put every process on this GPU (machines with fewer GPUs than processes); -1: the local rank's")
	flag.Parse()
	if err := run(*a, *n, *steps, *every, *dev); err != nil {
		fmt.Fprintln(os.Stderr, "coupling:", err)
		os.Exit(1)
	}
}

func run(a, n, steps, every, dev int) error {
	if err := mpiboot.Init(); err != nil {
		return err
	}
	defer mpiboot.Finalize()
	isA, err := role(a)
	if err != nil {
		return err
	}
	rank, _ := mpiboot.World()
	color := 1
	if isA {
		color = 0
	}
	mine, err := mpiboot.SplitWorld(color, rank) // this solver's ranks
	if err != nil {
		return err
	}
	defer mine.Free()
	cfg := &comm.Config{Device: mpiboot.LocalRank(), DeviceSet: true} // one device per process of the job
	if dev >= 0 {
		cfg.Device = dev // every process on one device (ranks sharing a GPU)
	}
	c, err := mine.NewComm(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := newSolver(c, n, isA)
	if err != nil {
		return err
	}
	defer v.close()
	link, err := newInterface(v, n, cfg)
	if err != nil {
		return err
	}
	defer link.close()

	var res float64
	for s := range steps {
		if s%every == 0 {
			if err := link.exchange(v); err != nil {
				return err
			}
		}
		if err := v.exchangeHalos(); err != nil {
			return err
		}
		if res, err = v.residual(v.blk.step()); err != nil {
			return err
		}
	}
	return v.verify(n, steps, every, res)
}

// role says whether this process belongs to solver A: the first a ranks,
// or the processes of the MPMD job's first command.
func role(a int) (bool, error) {
	rank, size := mpiboot.World()
	if a > 0 {
		if a >= size {
			return false, fmt.Errorf("-a %d leaves no rank of %d for solver B", a, size)
		}
		return rank < a, nil
	}
	app, ok, err := mpiboot.Appnum()
	if err != nil {
		return false, err
	}
	if !ok || app > 1 {
		return false, fmt.Errorf("launch as MPMD with two commands (mpirun -np 2 coupling : -np 2 coupling) or pass -a")
	}
	return app == 0, nil
}

// verify compares this rank's cells and the solver's residual with the
// single-process reference; the solver's rank 0 reports.
func (v *solver) verify(n, steps, every int, res float64) error {
	ra, rb, resA, resB := reference(n, steps, every)
	ref, refRes, name := rb, resB, "B"
	if v.isA {
		ref, refRes, name = ra, resA, "A"
	}
	var worst float64
	for j := 1; j <= v.blk.ny; j++ {
		for i := 1; i <= v.blk.nx; i++ {
			got, want := *v.blk.at(i, j), *ref.at(v.x0+i, v.y0+j)
			worst = max(worst, math.Abs(got-want))
			if math.Abs(got-want) > 1e-12*max(1, math.Abs(want)) {
				return fmt.Errorf("solver %s cell (%d,%d) is %v, the reference %v", name, v.x0+i-1, v.y0+j-1, got, want)
			}
		}
	}
	if math.Abs(res-refRes) > 1e-9*refRes {
		return fmt.Errorf("solver %s residual %v, the reference %v", name, res, refRes)
	}
	if v.c.Rank() == 0 {
		fmt.Printf("coupling: solver %s, %d ranks (%d×%d grid), %d×%d cells, %d steps, interface every %d: residual %.6e (reference %.6e), every cell matches the reference (max diff %.1e)\n",
			name, v.c.Count(), v.cart.Dims[0], v.cart.Dims[1], n, n, steps, every, res, refRes, worst)
	}
	return v.c.Finalize()
}
