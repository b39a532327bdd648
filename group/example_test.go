package group_test

import (
	"encoding/binary"
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
)

// One goroutine drives both ranks of a communicator in this process (host
// backend): a group creates the ranks, then holds an AllReduce of each
// rank and an exchange between them (a Send and a Recv on each), and End
// launches them together. Issued one by one, the first rank's operations
// would wait for the second rank, which nobody would issue.
func ExampleGroup() {
	const nranks, count = 2, 3
	id, err := comm.NewUniqueID()
	if err != nil {
		panic(err)
	}
	comms := make([]*comm.Comm, nranks)
	g := group.New()
	for r := range comms {
		g.InitRank(&comms[r], nranks, id, r, &comm.Config{Backend: device.Host})
	}
	if err := g.End(); err != nil {
		panic(err)
	}
	defer func() {
		_ = comm.FinalizeAll(comms)
		for _, c := range comms {
			_ = c.Close()
		}
	}()

	type rank struct {
		d                   device.Device
		s                   gccl.Stream
		sum, mine, fromPeer uintptr
	}
	ranks := make([]rank, nranks)
	for r, c := range comms {
		x := &ranks[r]
		x.d = c.Device()
		if x.s, err = x.d.NewStream(); err != nil {
			panic(err)
		}
		for _, p := range []*uintptr{&x.sum, &x.mine, &x.fromPeer} {
			if *p, err = x.d.Alloc(4 * count); err != nil {
				panic(err)
			}
		}
		in := make([]byte, 4*count)
		for i := range count {
			binary.LittleEndian.PutUint32(in[4*i:], uint32(100*(r+1)+i)) // rank r holds 100(r+1)+i
		}
		if err := x.d.CopyIn(x.mine, in); err != nil {
			panic(err)
		}
	}

	g = group.New()
	for r, c := range comms {
		x, peer := ranks[r], (r+1)%nranks
		g.AllReduce(c, x.mine, x.sum, count, gccl.Int32, gccl.Sum, x.s)
		g.Send(c, x.mine, count, gccl.Int32, peer, x.s)
		g.Recv(c, x.fromPeer, count, gccl.Int32, peer, x.s)
	}
	if err := g.End(); err != nil {
		panic(err)
	}

	for r, x := range ranks {
		if err := x.d.Synchronize(x.s); err != nil {
			panic(err)
		}
		fmt.Printf("rank %d: sum %v, from its peer %v\n", r, readInt32s(x.d, x.sum, count), readInt32s(x.d, x.fromPeer, count))
		for _, p := range []uintptr{x.sum, x.mine, x.fromPeer} {
			_ = x.d.Free(p)
		}
		_ = x.d.DestroyStream(x.s)
	}
	// Output:
	// rank 0: sum [300 302 304], from its peer [200 201 202]
	// rank 1: sum [300 302 304], from its peer [100 101 102]
}

// readInt32s reads n int32 values at p.
func readInt32s(d device.Device, p uintptr, n int) []int32 {
	b := make([]byte, 4*n)
	if err := d.CopyOut(b, p); err != nil {
		panic(err)
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
