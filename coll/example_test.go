package coll_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
)

// Two ranks in this process sum four float32 values each on the host
// backend (no GPU needed); every rank gets the sum.
func ExampleAllReduce() {
	const nranks, count = 2, 4
	id, err := comm.NewUniqueID()
	if err != nil {
		panic(err)
	}
	reqs := make([]comm.InitReq, nranks)
	for r := range reqs {
		reqs[r] = comm.InitReq{NRanks: nranks, ID: id, Rank: r, Config: &comm.Config{Backend: device.Host}}
	}
	comms, err := comm.InitRanks(reqs)
	if err != nil {
		panic(err)
	}
	defer func() {
		_ = comm.FinalizeAll(comms)
		for _, c := range comms {
			_ = c.Close()
		}
	}()

	results := make([][]float32, nranks)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			d := c.Device()
			buf, err := d.Alloc(4 * count)
			if err != nil {
				panic(err)
			}
			defer d.Free(buf)
			in := make([]byte, 4*count)
			for i := range count {
				binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(float32(10*r+i))) // rank r holds 10r+i
			}
			if err := d.CopyIn(buf, in); err != nil {
				panic(err)
			}
			s, err := d.NewStream()
			if err != nil {
				panic(err)
			}
			defer d.DestroyStream(s)
			// In place: sendbuff == recvbuff.
			if err := coll.AllReduce(c, buf, buf, count, gccl.Float32, gccl.Sum, s); err != nil {
				panic(err)
			}
			if err := d.Synchronize(s); err != nil {
				panic(err)
			}
			out := make([]byte, 4*count)
			if err := d.CopyOut(out, buf); err != nil {
				panic(err)
			}
			for i := range count {
				results[r] = append(results[r], math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:])))
			}
		})
	}
	wg.Wait()
	for r, got := range results {
		fmt.Printf("rank %d: %v\n", r, got)
	}
	// Output:
	// rank 0: [10 12 14 16]
	// rank 1: [10 12 14 16]
}
