package badinput

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/require"
)

// onShared runs f on the shared world (rank 0 makes the mistake alone;
// no rank launches anything).
func onShared(f func(t *testing.T, w *world) error) func(t *testing.T) error {
	return func(t *testing.T) error { return f(t, share()) }
}

// refused is a buffer case whose call rank 0 makes alone on the shared
// world and gccl refuses at once; every output stays as it was.
func refused(name, did, arg string, words []string, call func(t *testing.T, w *world) (error, []uintptr)) badCase {
	return badCase{name: name, class: buffers, did: did, code: gccl.InvalidArgument, arg: arg, words: words,
		then: "nothing runs, no byte is written", shared: true,
		run: onShared(func(t *testing.T, w *world) error {
			err, outs := call(t, w)
			require.NoError(t, w.sync(0))
			for _, p := range outs {
				untouched(t, p, 4096, "an output of the refused call")
			}
			return err
		})}
}

func bufferCases() []badCase {
	return []badCase{
		refused("allreduce-count-past-recvbuff", "AllReduce of 2048 int32 from an 8 KiB Alloc into a 4 KiB Alloc", "recvbuff",
			[]string{"AllReduce of 2048 int32: recvbuff [", ",+8192) runs 4096 bytes past its allocation of 4096 bytes at", "larger allocation"},
			func(t *testing.T, w *world) (error, []uintptr) {
				send, recv := w.alloc(t, 0, 8192), w.alloc(t, 0, 4096)
				return coll.AllReduce(w.comms[0], send, recv, 2048, gccl.Int32, gccl.Sum, w.streams[0]), []uintptr{recv}
			}),
		refused("allreduce-in-place-past-alloc", "AllReduce in place of 8 KiB on a 4 KiB Alloc, another Alloc next to it", "recvbuff",
			[]string{"recvbuff [", ",+8192) runs 4096 bytes past its allocation of 4096 bytes"},
			func(t *testing.T, w *world) (error, []uintptr) {
				p, next := w.alloc(t, 0, 4096), w.alloc(t, 0, 4096)
				return coll.AllReduce(w.comms[0], p, p, 2048, gccl.Int32, gccl.Sum, w.streams[0]), []uintptr{p, next}
			}),
		refused("allreduce-count-past-sendbuff", "AllReduce of 2048 int32 from a 4 KiB Alloc into an 8 KiB one", "sendbuff",
			[]string{"sendbuff [", "runs 4096 bytes past its allocation of 4096 bytes"},
			func(t *testing.T, w *world) (error, []uintptr) {
				send, recv := w.alloc(t, 0, 4096), w.alloc(t, 0, 8192)
				return coll.AllReduce(w.comms[0], send, recv, 2048, gccl.Int32, gccl.Sum, w.streams[0]), []uintptr{recv}
			}),
		refused("offset-past-alloc", "AllReduce of 50 int32 at offset 4000 of a 4 KiB Alloc", "recvbuff",
			[]string{"runs 104 bytes past its allocation of 4096 bytes"},
			func(t *testing.T, w *world) (error, []uintptr) {
				p := w.alloc(t, 0, 4096)
				return coll.AllReduce(w.comms[0], p+4000, p+4000, 50, gccl.Int32, gccl.Sum, w.streams[0]), []uintptr{p}
			}),
		refused("size-asked-not-page", "AllReduce of 64 int32 in place on Alloc(100) (the page holds 4096)", "recvbuff",
			[]string{"runs 156 bytes past its allocation of 100 bytes"},
			func(t *testing.T, w *world) (error, []uintptr) {
				p := w.alloc(t, 0, 100)
				return coll.AllReduce(w.comms[0], p, p, 64, gccl.Int32, gccl.Sum, w.streams[0]), nil
			}),
		refused("never-allocated", "AllReduce from a pointer nothing allocated (0x1000)", "sendbuff",
			[]string{"sendbuff [0x1000,+64) is not inside any allocation", "Device.Alloc or bufreg.MemAlloc"},
			func(t *testing.T, w *world) (error, []uintptr) {
				recv := w.alloc(t, 0, 4096)
				return coll.AllReduce(w.comms[0], junk, recv, 16, gccl.Int32, gccl.Sum, w.streams[0]), []uintptr{recv}
			}),
		refused("after-free", "AllReduce in place on a buffer after Free", "recvbuff",
			[]string{"lies in an allocation of 4096 bytes at", "that was freed"},
			func(t *testing.T, w *world) (error, []uintptr) {
				p := w.freed(t, 0, 4096)
				return coll.AllReduce(w.comms[0], p, p, 16, gccl.Int32, gccl.Sum, w.streams[0]), nil
			}),
		refused("wraps-around", "AllReduce from a pointer 8 bytes below the top of the address space", "sendbuff",
			[]string{"wraps around the end of the address space"},
			func(t *testing.T, w *world) (error, []uintptr) {
				recv := w.alloc(t, 0, 4096)
				return coll.AllReduce(w.comms[0], ^uintptr(0)-7, recv, 16, gccl.Int32, gccl.Sum, w.streams[0]), []uintptr{recv}
			}),
		refused("nil-sendbuff", "AllReduce with sendbuff 0", "sendbuff", []string{"sendbuff is nil with count 16"},
			func(t *testing.T, w *world) (error, []uintptr) {
				recv := w.alloc(t, 0, 4096)
				return coll.AllReduce(w.comms[0], 0, recv, 16, gccl.Int32, gccl.Sum, w.streams[0]), []uintptr{recv}
			}),
		refused("nil-recvbuff", "AllGather with recvbuff 0", "recvbuff", []string{"recvbuff is nil"},
			func(t *testing.T, w *world) (error, []uintptr) {
				return coll.AllGather(w.comms[0], w.alloc(t, 0, 4096), 0, 16, gccl.Int32, w.streams[0]), nil
			}),
		refused("partial-overlap", "AllReduce with recvbuff = sendbuff + 4 bytes", "recvbuff", []string{"overlap without being in place"},
			func(t *testing.T, w *world) (error, []uintptr) {
				p := w.alloc(t, 0, 4096)
				return coll.AllReduce(w.comms[0], p, p+4, 16, gccl.Int32, gccl.Sum, w.streams[0]), nil
			}),
		refused("broadcast-root-sendbuff", "Broadcast whose root passes a never-allocated sendbuff", "sendbuff",
			[]string{"Broadcast of 16 int32: sendbuff [0x1000,+64) is not inside any allocation"},
			func(t *testing.T, w *world) (error, []uintptr) {
				recv := w.alloc(t, 0, 4096)
				return coll.Broadcast(w.comms[0], junk, recv, 16, gccl.Int32, 0, w.streams[0]), []uintptr{recv}
			}),
		refused("reduce-root-recvbuff-freed", "Reduce whose root passes a freed recvbuff", "recvbuff",
			[]string{"Reduce of 16 int32: recvbuff [", "that was freed"},
			func(t *testing.T, w *world) (error, []uintptr) {
				return coll.Reduce(w.comms[0], w.alloc(t, 0, 4096), w.freed(t, 0, 4096), 16, gccl.Int32, gccl.Sum, 0, w.streams[0]), nil
			}),
		refused("allgather-recvbuff-nranks", "AllGather of 1024 int32 per rank (2 ranks) into a 4 KiB recvbuff", "recvbuff",
			[]string{"AllGather of 1024 int32: recvbuff [", ",+8192) runs 4096 bytes past"},
			func(t *testing.T, w *world) (error, []uintptr) {
				recv := w.alloc(t, 0, 4096)
				return coll.AllGather(w.comms[0], w.alloc(t, 0, 4096), recv, 1024, gccl.Int32, w.streams[0]), []uintptr{recv}
			}),
		refused("allgather-in-place-small", "AllGather in place (sendbuff = recvbuff + rank×4 KiB) on a 4 KiB recvbuff", "recvbuff",
			[]string{"AllGather of 1024 int32: recvbuff [", "runs 4096 bytes past"},
			func(t *testing.T, w *world) (error, []uintptr) {
				p := w.alloc(t, 0, 4096)
				return coll.AllGather(w.comms[0], p, p, 1024, gccl.Int32, w.streams[0]), []uintptr{p}
			}),
		refused("reducescatter-sendbuff-nranks", "ReduceScatter of 1024 int32 per rank (2 ranks) from a 4 KiB sendbuff", "sendbuff",
			[]string{"ReduceScatter of 1024 int32: sendbuff [", ",+8192) runs 4096 bytes past"},
			func(t *testing.T, w *world) (error, []uintptr) {
				recv := w.alloc(t, 0, 4096)
				return coll.ReduceScatter(w.comms[0], w.alloc(t, 0, 4096), recv, 1024, gccl.Int32, gccl.Sum, w.streams[0]), []uintptr{recv}
			}),
		refused("send-past-alloc", "Send of 2048 int32 from a 4 KiB Alloc", "sendbuff",
			[]string{"Send of 2048 int32 to rank 1: sendbuff [", "runs 4096 bytes past"},
			func(t *testing.T, w *world) (error, []uintptr) {
				return p2p.Send(w.comms[0], w.alloc(t, 0, 4096), 2048, gccl.Int32, 1, w.streams[0]), nil
			}),
		refused("recv-freed", "Recv into a freed buffer", "recvbuff",
			[]string{"Recv of 16 int32 from rank 1: recvbuff [", "that was freed"},
			func(t *testing.T, w *world) (error, []uintptr) {
				return p2p.Recv(w.comms[0], w.freed(t, 0, 4096), 16, gccl.Int32, 1, w.streams[0]), nil
			}),
		refused("alltoallv-sdispls", "AllToAllv whose sdispls[1] = 1000 with sendcounts 100 on a 4 KiB sendbuff", "sendbuff",
			[]string{"AllToAllv (sdispls[j]+sendcounts[j]) of 1100 int32: sendbuff [", ",+4400) runs 304 bytes past its allocation of 4096 bytes"},
			func(t *testing.T, w *world) (error, []uintptr) {
				send, recv := w.alloc(t, 0, 4096), w.alloc(t, 0, 4096)
				return p2p.AllToAllv(w.comms[0], send, []int{100, 100}, []int{0, 1000}, recv, []int{100, 100}, []int{0, 100},
					gccl.Int32, w.streams[0]), []uintptr{recv}
			}),
		refused("alltoallv-rdispls", "AllToAllv whose rdispls[1] = 1020 with recvcounts 100 on a 4 KiB recvbuff", "recvbuff",
			[]string{"AllToAllv (rdispls[j]+recvcounts[j]) of 1120 int32: recvbuff [", ",+4480) runs 384 bytes past"},
			func(t *testing.T, w *world) (error, []uintptr) {
				send, recv := w.alloc(t, 0, 4096), w.alloc(t, 0, 4096)
				return p2p.AllToAllv(w.comms[0], send, []int{100, 100}, []int{0, 100}, recv, []int{100, 100}, []int{0, 1020},
					gccl.Int32, w.streams[0]), []uintptr{recv}
			}),
		refused("scatter-root-sendbuff", "Scatter of 1024 int32 per rank from the root's 4 KiB sendbuff (2 ranks)", "sendbuff",
			[]string{"Scatter of 2048 int32: sendbuff [", ",+8192) runs 4096 bytes past"},
			func(t *testing.T, w *world) (error, []uintptr) {
				recv := w.alloc(t, 0, 4096)
				return p2p.Scatter(w.comms[0], w.alloc(t, 0, 4096), recv, 1024, gccl.Int32, 0, w.streams[0]), []uintptr{recv}
			}),
		refused("gather-root-recvbuff", "Gather of 1024 int32 per rank into the root's 4 KiB recvbuff (2 ranks)", "recvbuff",
			[]string{"Gather of 2048 int32: recvbuff [", ",+8192) runs 4096 bytes past"},
			func(t *testing.T, w *world) (error, []uintptr) {
				recv := w.alloc(t, 0, 4096)
				return p2p.Gather(w.comms[0], w.alloc(t, 0, 4096), recv, 1024, gccl.Int32, 0, w.streams[0]), []uintptr{recv}
			}),
		refused("group-member-buffer", "a group of a valid AllReduce and an AllReduce past its 4 KiB recvbuff", "recvbuff",
			[]string{"AllReduce of 2048 int32: recvbuff [", "runs 4096 bytes past"},
			func(t *testing.T, w *world) (error, []uintptr) {
				good, bad := w.alloc(t, 0, 4096), w.alloc(t, 0, 4096)
				g := group.New()
				g.AllReduce(w.comms[0], good, good, 16, gccl.Int32, gccl.Sum, w.streams[0])
				g.AllReduce(w.comms[0], bad, bad, 2048, gccl.Int32, gccl.Sum, w.streams[0])
				return g.End(), []uintptr{good, bad}
			}),
		{name: "broadcast-nonroot-sendbuff", class: buffers, code: gccl.Success, shared: true,
			did:  "Broadcast from root 0 where rank 1 passes a never-allocated sendbuff (NCCL reads sendbuff on the root only)",
			then: "every rank receives the root's data",
			run: onShared(func(t *testing.T, w *world) error {
				return rootOnly(t, w, func(r int, send, recv uintptr) error {
					if r == 1 {
						send = junk
					}
					return coll.Broadcast(w.comms[r], send, recv, 1000, gccl.Int32, 0, w.streams[r])
				}, func(int) func(int) int32 { return func(i int) int32 { return value(0, i) } })
			})},
		{name: "reduce-nonroot-recvbuff", class: buffers, code: gccl.Success, shared: true,
			did:  "Reduce to root 0 where rank 1 passes a never-allocated recvbuff (NCCL writes recvbuff on the root only)",
			then: "the root receives the right sum",
			run: onShared(func(t *testing.T, w *world) error {
				return rootOnly(t, w, func(r int, send, recv uintptr) error {
					if r == 1 {
						recv = junk
					}
					return coll.Reduce(w.comms[r], send, recv, 1000, gccl.Int32, gccl.Sum, 0, w.streams[r])
				}, func(r int) func(int) int32 {
					if r == 0 {
						return sum(2)
					}
					return nil
				})
			})},
		{name: "pinned-go-memory", class: buffers, code: gccl.Success, shared: true,
			did:  "AllReduce on pinned Go slices (memory gccl did not allocate, but mapped)",
			then: "accepted (any mapped host memory is a valid host buffer); the sum is right",
			run: onShared(func(t *testing.T, w *world) error {
				var pin runtime.Pinner
				defer pin.Unpin()
				bufs := make([][]int32, 2*len(w.comms))
				ptr := func(b []int32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
				for i := range bufs {
					bufs[i] = make([]int32, 1000)
					pin.Pin(&bufs[i][0])
				}
				errs := w.par(func(r int) error {
					for i := range bufs[2*r] {
						bufs[2*r][i] = value(r, i)
					}
					if err := coll.AllReduce(w.comms[r], ptr(bufs[2*r]), ptr(bufs[2*r+1]), 1000, gccl.Int32, gccl.Sum, w.streams[r]); err != nil {
						return err
					}
					return w.sync(r)
				})
				for r := range w.comms {
					require.NoError(t, errs[r])
					want(t, ptr(bufs[2*r+1]), 1000, sum(2), "Go memory")
				}
				return nil
			})},
		{name: "registered-memalloc-ok", class: buffers, code: gccl.Success, shared: true,
			did:  "AllReduce inside a bufreg.MemAlloc buffer registered with bufreg.Register",
			then: "accepted; the sum is right",
			run: onShared(func(t *testing.T, w *world) error {
				return registered(t, w, 2000, false)
			})},
		{name: "registered-memalloc-overrun", class: buffers, code: gccl.InvalidArgument, arg: "recvbuff", shared: true,
			did:   "AllReduce of 2048 int32 in place on a registered 4 KiB bufreg.MemAlloc buffer",
			words: []string{"AllReduce of 2048 int32: recvbuff [", "runs 4096 bytes past its allocation of 4096 bytes"},
			then:  "nothing runs",
			run: onShared(func(t *testing.T, w *world) error {
				return registered(t, w, 2048, true)
			})},
	}
}

// rootOnly runs op on every rank of w with 1000 int32 of each rank's
// values in and poison out, then checks rank r's output against out(r)
// (nil: not checked).
func rootOnly(t *testing.T, w *world, op func(r int, send, recv uintptr) error, out func(r int) func(int) int32) error {
	send, recv := make([]uintptr, len(w.comms)), make([]uintptr, len(w.comms))
	for r := range w.comms {
		send[r], recv[r] = w.alloc(t, r, 4000), w.alloc(t, r, 4000)
		fill(send[r], 1000, func(i int) int32 { return value(r, i) })
	}
	errs := w.par(func(r int) error {
		if err := op(r, send[r], recv[r]); err != nil {
			return err
		}
		return w.sync(r)
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		if f := out(r); f != nil {
			want(t, recv[r], 1000, f, "output")
		}
	}
	return nil
}

// registered registers an 8 KiB MemAlloc buffer on every rank of w (4 KiB
// on rank 0 when tooSmall) and runs an in-place AllReduce of count int32
// on them: on rank 0 alone when tooSmall, returning its error, else on
// every rank, checking the sum.
func registered(t *testing.T, w *world, count int, tooSmall bool) error {
	bufs := make([]uintptr, len(w.comms))
	hs := make([]*bufreg.Handle, len(w.comms))
	for r := range w.comms {
		p, err := bufreg.MemAlloc(w.devs[r], 8192)
		require.NoError(t, err)
		bufs[r] = p
		t.Cleanup(func() { _ = bufreg.MemFree(p) })
	}
	if tooSmall {
		p, err := bufreg.MemAlloc(w.devs[0], 4096)
		require.NoError(t, err)
		t.Cleanup(func() { _ = bufreg.MemFree(p) })
		bufs[0] = p
	}
	errs := w.par(func(r int) (err error) {
		size := 8192
		if tooSmall && r == 0 {
			size = 4096
		}
		hs[r], err = bufreg.Register(w.comms[r], bufs[r], size)
		return err
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		t.Cleanup(func() { _ = bufreg.Deregister(hs[r]) })
	}
	if tooSmall {
		err := coll.AllReduce(w.comms[0], bufs[0], bufs[0], count, gccl.Int32, gccl.Sum, w.streams[0])
		require.NoError(t, w.sync(0))
		return err
	}
	errs = w.par(func(r int) error {
		fill(bufs[r], count, func(i int) int32 { return value(r, i) })
		if err := coll.AllReduce(w.comms[r], bufs[r], bufs[r], count, gccl.Int32, gccl.Sum, w.streams[r]); err != nil {
			return err
		}
		return w.sync(r)
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		want(t, bufs[r], count, sum(2), "registered buffer")
	}
	return nil
}
