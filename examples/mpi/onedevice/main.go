// Command onedevice is the NCCL guide's example 2, "one device per process":
// mpirun starts one process per device; MPI gives each its rank, rank 0
// makes the unique ID and MPI broadcasts it, each process uses the device
// of its local rank, and all of them sum a vector with AllReduce.
//
//	mpirun -np 4 onedevice [-count 1048576]
//
// Without a GPU (or with GCCL_DEVICE=host) it runs on the host backend.
package main

import (
	"flag"
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/examples/mpi/demo"
	"github.com/gccl/gccl/mpiboot"
)

func main() {
	count := flag.Int("count", 1<<20, "float32 elements per rank")
	flag.Parse()
	demo.Exit(run(*count))
}

func run(n int) error {
	if err := mpiboot.Init(); err != nil {
		return err
	}
	defer mpiboot.Finalize()
	rank, size := mpiboot.World()

	c, err := mpiboot.NewComm(nil) // device = local rank
	if err != nil {
		return err
	}
	defer c.Close()
	d := c.Device()
	s, err := d.NewStream()
	if err != nil {
		return err
	}
	defer d.DestroyStream(s)
	send, err := demo.Upload(d, demo.Values(rank, n))
	if err != nil {
		return err
	}
	defer d.Free(send)
	recv, err := demo.Poisoned(d, n)
	if err != nil {
		return err
	}
	defer d.Free(recv)

	if err := coll.AllReduce(c, send, recv, n, gccl.Float32, gccl.Sum, s); err != nil {
		return err
	}
	if err := d.Synchronize(s); err != nil { // the operation is complete on this rank
		return err
	}
	checkErr := demo.CheckDevice(d, recv, demo.Sum(size, n))
	failed, err := demo.AllOK(checkErr)
	switch {
	case err != nil:
		return err
	case checkErr != nil:
		return fmt.Errorf("allreduce result: %w", checkErr)
	case failed >= 0:
		return fmt.Errorf("rank %d got a wrong allreduce result", failed)
	}
	if err := c.Finalize(); err != nil {
		return err
	}
	if rank == 0 {
		fmt.Printf("allreduce of %d ranks × %d float32 on %v: OK, sum checked\n", size, n, d.Kind())
	}
	return nil
}
