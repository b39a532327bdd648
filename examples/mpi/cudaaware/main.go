// Command cudaaware alternates MPI traffic with gccl collectives on the same
// buffers, in the order the NCCL guide (§4.2.2) requires beside CUDA-aware
// MPI: gccl and MPI both make GPUs wait on each other, so a buffer goes to
// MPI only once gccl's stream is done with it, and back to gccl only once
// MPI's requests have completed. Each round:
//
//  1. gccl ReduceScatter: part = this rank's block of the sum of every buf;
//  2. MPI ring shift (Isend/Irecv): recv = the left neighbour's part, device
//     buffers straight to MPI when it is CUDA-aware (or the backend is the
//     host's), host copies otherwise;
//  3. gccl AllGather: buf = every rank's recv;
//
// and every element of buf is checked against a host model.
//
//	mpirun -np 4 cudaaware [-rounds 4] [-count 65536] [-stage]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/mpiboot"
)

func main() {
	rounds := flag.Int("rounds", 4, "rounds of reduce-scatter, MPI ring shift, all-gather")
	count := flag.Int("count", 1<<16, "float32 elements per block (buf holds one block per rank)")
	stage := flag.Bool("stage", false, "give MPI host copies even where it could take the device buffers")
	dev := flag.Int("device", -1, "put every process on this GPU (machines with fewer GPUs than processes); -1: the local rank's")
	flag.Parse()
	if err := run(*rounds, *count, *stage, *dev); err != nil {
		fmt.Fprintln(os.Stderr, "cudaaware:", err)
		os.Exit(1)
	}
}

// buffers are one rank's device buffers, and host copies for MPI when it
// cannot take device memory (nil otherwise).
type buffers struct {
	d                  device.Device
	buf, part, recv    uintptr
	hostPart, hostRecv uintptr
	host               device.Device
}

func run(rounds, n int, stage bool, dev int) error {
	if err := mpiboot.Init(); err != nil {
		return err
	}
	defer mpiboot.Finalize()
	aware, err := mpiboot.CUDAAware()
	if err != nil {
		return err
	}
	mc, err := mpiboot.FromWorld() // the application's MPI traffic, apart from gccl's
	if err != nil {
		return err
	}
	defer mc.Free()
	var cfg *comm.Config // nil: the local rank's device
	if dev >= 0 {
		cfg = &comm.Config{Device: dev, DeviceSet: true} // every process on one device (ranks sharing a GPU)
	}
	c, err := mc.NewComm(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	rank, size := c.Rank(), c.Count()
	direct := !stage && (aware == mpiboot.CUDAYes || c.Device().Kind() == device.Host)
	b, err := alloc(c.Device(), n, size, direct)
	if err != nil {
		return err
	}
	defer b.free()
	s, err := b.d.NewStream()
	if err != nil {
		return err
	}
	defer b.d.DestroyStream(s)

	model := make([][]float32, size) // every rank's buf
	for r := range model {
		model[r] = initial(r, n*size)
	}
	if err := b.d.CopyIn(b.buf, bytesOf(model[rank])); err != nil {
		return err
	}
	for round := range rounds {
		if err := coll.ReduceScatter(c, b.buf, b.part, n, gccl.Float32, gccl.Sum, s); err != nil {
			return err
		}
		if err := mpiboot.Wait(b.d, s, 0); err != nil { // gccl done before MPI reads part
			return err
		}
		if err := b.shift(mc, n); err != nil { // MPI done before gccl reads recv
			return fmt.Errorf("round %d: %w", round, err)
		}
		if err := coll.AllGather(c, b.recv, b.buf, n, gccl.Float32, s); err != nil {
			return err
		}
		if err := mpiboot.Wait(b.d, s, 0); err != nil {
			return err
		}
		model = step(model, n)
		if err := check(b.d, b.buf, model[rank]); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	if rank == 0 {
		fmt.Printf("cudaaware: %d ranks on %v, MPI CUDA-aware: %v, MPI moved %s; %d rounds of reduce-scatter, MPI ring shift, all-gather (%d float32 per block): every element OK\n",
			size, b.d.Kind(), aware, b.how(), rounds, n)
	}
	return c.Finalize()
}
