// Command multidevice is the NCCL guide's example 3, "multiple devices per
// thread": each MPI process drives ngpus devices from one goroutine. Rank 0
// makes the unique ID and broadcasts it; a group of ngpus InitRank creates
// this process's ranks of a communicator of ngpus × nprocs ranks (rank
// procRank*ngpus + i on device localRank*ngpus + i); a group launches the
// AllReduce on all of them at once; a group of Finalize ends them.
//
//	mpirun -np 2 multidevice [-ngpus 2] [-count 1048576]
package main

import (
	"flag"
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/examples/mpi/demo"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/mpiboot"
)

func main() {
	ngpus := flag.Int("ngpus", 2, "devices per process")
	count := flag.Int("count", 1<<20, "float32 elements per device")
	flag.Parse()
	demo.Exit(run(*ngpus, *count))
}

// rankBuffers is what one communicator rank works on.
type rankBuffers struct {
	c          *comm.Comm
	s          gccl.Stream
	send, recv uintptr
}

func run(ngpus, n int) error {
	if err := mpiboot.Init(); err != nil {
		return err
	}
	defer mpiboot.Finalize()
	myRank, nRanks := mpiboot.World()
	id, err := mpiboot.ShareUniqueID() // rank 0 makes it, MPI_Bcast shares it
	if err != nil {
		return err
	}
	comms := make([]*comm.Comm, ngpus)
	g := group.New()
	for i := range comms {
		dev := &comm.Config{Device: mpiboot.LocalRank()*ngpus + i, DeviceSet: true}
		g.InitRank(&comms[i], ngpus*nRanks, id, myRank*ngpus+i, dev)
	}
	if err := g.End(); err != nil {
		return err
	}
	ranks := make([]rankBuffers, ngpus)
	defer func() {
		for _, r := range ranks {
			release(r)
		}
	}()
	for i, c := range comms {
		if ranks[i], err = setUp(c, n); err != nil {
			return err
		}
	}

	g = group.New() // one launch for all of this process's devices
	for _, r := range ranks {
		g.AllReduce(r.c, r.send, r.recv, n, gccl.Float32, gccl.Sum, r.s)
	}
	if err := g.End(); err != nil {
		return err
	}
	nranks := comms[0].Count()
	want := demo.Sum(nranks, n)
	var checkErr error
	for _, r := range ranks {
		d := r.c.Device()
		if err := mpiboot.Wait(d, r.s, 0); err != nil {
			return err
		}
		if err := demo.CheckDevice(d, r.recv, want); err != nil && checkErr == nil {
			checkErr = fmt.Errorf("rank %d: %w", r.c.Rank(), err)
		}
	}
	failed, err := demo.AllOK(checkErr)
	switch {
	case err != nil:
		return err
	case checkErr != nil:
		return checkErr
	case failed >= 0:
		return fmt.Errorf("process %d got a wrong allreduce result", failed)
	}
	g = group.New() // one goroutine finalizes all of its ranks
	for _, c := range comms {
		g.Finalize(c)
	}
	if err := g.End(); err != nil {
		return err
	}
	if myRank == 0 {
		fmt.Printf("allreduce of %d processes × %d devices × %d float32 on %v: OK, sum checked\n",
			nRanks, ngpus, n, comms[0].Device().Kind())
	}
	return nil
}

// setUp makes a stream and the buffers of one rank.
func setUp(c *comm.Comm, n int) (rankBuffers, error) {
	r := rankBuffers{c: c}
	d := c.Device()
	var err error
	if r.s, err = d.NewStream(); err != nil {
		return r, err
	}
	if r.send, err = demo.Upload(d, demo.Values(c.Rank(), n)); err != nil {
		return r, err
	}
	r.recv, err = demo.Poisoned(d, n)
	return r, err
}

func release(r rankBuffers) {
	if r.c == nil {
		return
	}
	d := r.c.Device()
	for _, p := range []uintptr{r.send, r.recv} {
		if p != 0 {
			_ = d.Free(p)
		}
	}
	if r.s != 0 {
		_ = d.DestroyStream(r.s)
	}
	_ = r.c.Close()
}
