package bufreg_test

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
)

// Each rank allocates registrable memory with MemAlloc, registers it with
// its communicator (collective: every rank registers, in the same order),
// runs an AllReduce on sub-buffers of the registered memory, deregisters
// and frees it. On the host backend the peers map each other's shared
// memory; on a GPU the same code lets kernels read peers' buffers with no
// staging copy.
func ExampleRegister() {
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

	out := make([]string, nranks)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() { out[r] = registeredAllReduce(c, count) })
	}
	wg.Wait()
	for _, line := range out {
		fmt.Println(line)
	}
	// Output:
	// rank 0: [2 4 6 8]
	// rank 1: [2 4 6 8]
}

// registeredAllReduce is one rank of ExampleRegister: the input and the
// output are the two halves of one registered allocation.
func registeredAllReduce(c *comm.Comm, count int) string {
	d := c.Device()
	mem, err := bufreg.MemAlloc(d, 2*4*count)
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := bufreg.MemFree(mem); err != nil {
			panic(err)
		}
	}()
	h, err := bufreg.Register(c, mem, 2*4*count)
	if err != nil {
		panic(err)
	}
	send, recv := mem, mem+uintptr(4*count)
	in := make([]byte, 4*count)
	for i := range count {
		binary.LittleEndian.PutUint32(in[4*i:], uint32(i+1))
	}
	if err := d.CopyIn(send, in); err != nil {
		panic(err)
	}
	s, err := d.NewStream()
	if err != nil {
		panic(err)
	}
	defer d.DestroyStream(s)
	if err := coll.AllReduce(c, send, recv, count, gccl.Uint32, gccl.Sum, s); err != nil {
		panic(err)
	}
	if err := d.Synchronize(s); err != nil {
		panic(err)
	}
	// Deregister after the operations that use the buffer are done (the
	// stream is synchronized), before MemFree.
	if err := bufreg.Deregister(h); err != nil {
		panic(err)
	}
	b := make([]byte, 4*count)
	if err := d.CopyOut(b, recv); err != nil {
		panic(err)
	}
	v := make([]uint32, count)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return fmt.Sprintf("rank %d: %v", c.Rank(), v)
}
