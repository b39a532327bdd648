// Command singleprocess is the NCCL guide's example 1, "single process,
// single thread, multiple devices": comm.InitAll creates one communicator
// per device inside this process, with no MPI at all, and one goroutine
// drives them all through groups (the AllReduce, then the Finalize).
//
//	singleprocess [-ndev 4] [-count 1048576]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/examples/mpi/demo"
	"github.com/gccl/gccl/group"
)

func main() {
	ndev := flag.Int("ndev", 4, "devices (communicator ranks) in this process")
	count := flag.Int("count", 1<<20, "float32 elements per device")
	flag.Parse()
	if err := run(*ndev, *count); err != nil {
		fmt.Fprintln(os.Stderr, "singleprocess:", err)
		os.Exit(1)
	}
}

func run(ndev, n int) error {
	devs := make([]int, ndev)
	for i := range devs {
		devs[i] = i
	}
	comms, err := comm.InitAll(devs)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range comms {
			_ = c.Close()
		}
	}()
	streams := make([]gccl.Stream, ndev)
	bufs := make([]uintptr, ndev)
	for i, c := range comms {
		d := c.Device()
		if streams[i], err = d.NewStream(); err != nil {
			return err
		}
		defer d.DestroyStream(streams[i])
		if bufs[i], err = demo.Upload(d, demo.Values(i, n)); err != nil {
			return err
		}
		defer d.Free(bufs[i])
	}

	g := group.New()
	for i, c := range comms { // in place: each device's buffer becomes the sum
		g.AllReduce(c, bufs[i], bufs[i], n, gccl.Float32, gccl.Sum, streams[i])
	}
	if err := g.End(); err != nil {
		return err
	}
	want := demo.Sum(ndev, n)
	for i, c := range comms {
		if err := c.Device().Synchronize(streams[i]); err != nil {
			return err
		}
		if err := demo.CheckDevice(c.Device(), bufs[i], want); err != nil {
			return fmt.Errorf("device %d: %w", i, err)
		}
	}
	g = group.New() // one goroutine finalizes every rank: together, in a group
	for _, c := range comms {
		g.Finalize(c)
	}
	if err := g.End(); err != nil {
		return err
	}
	fmt.Printf("in-place allreduce of %d devices in one process × %d float32 on %v: OK, sum checked\n",
		ndev, n, comms[0].Device().Kind())
	return nil
}
