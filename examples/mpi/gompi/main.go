//go:build cgo && !mpich

// Command gompi shows gccl inside an application that starts MPI itself,
// here with github.com/sbromberger/gompi: the application calls
// mpi.Start(true) (MPI_THREAD_MULTIPLE), gccl attaches with mpiboot.Join,
// and at the end mpiboot.Finalize releases only gccl's communicator, leaving
// MPI to the application's mpi.Stop.
//
// gompi hard-codes Debian's Open MPI include and library paths, so this
// example builds only against Open MPI (not with -tags mpich).
//
//	mpirun -np 4 gompi [-count 1048576]
package main

import (
	"flag"
	"fmt"

	mpi "github.com/sbromberger/gompi"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/examples/mpi/demo"
	"github.com/gccl/gccl/mpiboot"
)

func main() {
	count := flag.Int("count", 1<<20, "float32 elements per rank")
	flag.Parse()
	mpi.Start(true) // the application owns MPI
	err := run(*count)
	demo.Exit(err)
	mpi.Stop()
}

func run(n int) error {
	if err := mpiboot.Join(); err != nil {
		return err
	}
	defer mpiboot.Finalize() // MPI itself stays up for the application

	rank, size := mpiboot.World()
	if rank != mpi.WorldRank() || size != mpi.WorldSize() {
		return fmt.Errorf("mpiboot sees rank %d of %d, gompi %d of %d", rank, size, mpi.WorldRank(), mpi.WorldSize())
	}
	c, err := mpiboot.NewComm(nil)
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
	buf, err := demo.Upload(d, demo.Values(rank, n))
	if err != nil {
		return err
	}
	defer d.Free(buf)
	if err := coll.AllReduce(c, buf, buf, n, gccl.Float32, gccl.Sum, s); err != nil {
		return err
	}
	if err := mpiboot.Wait(d, s, 0); err != nil {
		return err
	}
	if err := demo.CheckDevice(d, buf, demo.Sum(size, n)); err != nil {
		return err
	}
	// The application's own MPI keeps working next to gccl.
	world := mpi.NewCommunicator(nil)
	world.Barrier()
	if rank == 0 {
		fmt.Printf("gompi application + gccl allreduce of %d ranks × %d float32 on %v: OK, sum checked\n", size, n, d.Kind())
	}
	return c.Finalize()
}
