// Command progress shows the NCCL guide's "MPI progress" loop (§4.2.1).
// Some MPI implementations only make progress inside MPI calls, so a rank
// that blocks on its stream while a peer waits on MPI can deadlock the job.
// Instead of d.Synchronize(s) such a rank polls the stream and calls
// MPI_Iprobe in between: by hand below, or with mpiboot.Wait. Each round
// mixes a gccl AllReduce with an MPI broadcast of the result's checksum.
//
//	mpirun -np 4 progress [-rounds 8] [-count 65536]
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/examples/mpi/demo"
	"github.com/gccl/gccl/mpiboot"
)

func main() {
	rounds := flag.Int("rounds", 8, "allreduce + bcast rounds")
	count := flag.Int("count", 1<<16, "float32 elements per rank")
	flag.Parse()
	demo.Exit(run(*rounds, *count))
}

// waitByHand is the guide's loop, in Go, with a deadline added.
func waitByHand(d device.Device, s gccl.Stream, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		done, err := d.Query(s)
		if err != nil || done {
			return err
		}
		if _, err := mpiboot.Iprobe(); err != nil { // lets MPI progress
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stream not done after %v", timeout)
		}
	}
}

func run(rounds, n int) error {
	if err := mpiboot.Init(); err != nil {
		return err
	}
	defer mpiboot.Finalize()
	rank, size := mpiboot.World()
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

	want := demo.Sum(size, n)
	for round := range rounds {
		if err := coll.AllReduce(c, send, recv, n, gccl.Float32, gccl.Sum, s); err != nil {
			return err
		}
		wait := mpiboot.Wait
		if round == 0 {
			wait = waitByHand
		}
		if err := wait(d, s, time.Minute); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		if err := agree(d, recv, want, round%size); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	if rank == 0 {
		fmt.Printf("%d rounds of allreduce (%d ranks × %d float32 on %v) + MPI bcast, waiting with MPI progress: OK\n",
			rounds, size, n, d.Kind())
	}
	return c.Finalize()
}

// agree checks the result against want, then checks that it matches the
// checksum root broadcasts over MPI.
func agree(d device.Device, recv uintptr, want []float32, root int) error {
	got, err := demo.Download(d, recv, len(want))
	if err != nil {
		return err
	}
	if err := demo.Check(got, want); err != nil {
		return err
	}
	h := crc32.NewIEEE()
	for _, x := range got {
		h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(x)))
	}
	mine := h.Sum(nil)
	theirs := append([]byte(nil), mine...)
	if err := mpiboot.Bcast(theirs, root); err != nil {
		return err
	}
	if string(mine) != string(theirs) {
		return fmt.Errorf("result checksum %x differs from root %d's %x", mine, root, theirs)
	}
	return nil
}
