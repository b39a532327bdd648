package badinput

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/require"
)

// argCase is a case of class arguments that rank 0 makes alone on the
// shared world, with a 4 KiB send buffer p (random int32) and a 4 KiB
// receive buffer q (poisoned); gccl refuses at once and q is untouched.
func argCase(name, did, arg string, code gccl.Result, words []string, call func(w *world, p, q uintptr) error) badCase {
	return badCase{name: name, class: arguments, did: did, code: code, arg: arg, words: words,
		then: "nothing runs", shared: true,
		run: onShared(func(t *testing.T, w *world) error {
			p, q := w.alloc(t, 0, 4096), w.alloc(t, 0, 4096)
			fill(p, 1024, func(i int) int32 { return value(0, i) })
			err := call(w, p, q)
			require.NoError(t, w.sync(0))
			untouched(t, q, 4096, "recvbuff of the refused call")
			return err
		})}
}

func argumentCases() []badCase {
	ia := gccl.InvalidArgument
	return []badCase{
		argCase("negative-count", "AllReduce with count -1", "count", ia, []string{"count -1 is negative"},
			func(w *world, p, q uintptr) error {
				return coll.AllReduce(w.comms[0], p, q, -1, gccl.Int32, gccl.Sum, w.streams[0])
			}),
		argCase("count-overflow", "AllReduce of 2^62 int64 (the byte size overflows)", "count", ia, []string{"overflows the addressable size"},
			func(w *world, p, q uintptr) error {
				return coll.AllReduce(w.comms[0], p, q, 1<<62, gccl.Int64, gccl.Sum, w.streams[0])
			}),
		argCase("gathered-count-overflow", "ReduceScatter of 2^62 int8 per rank (× nranks overflows)", "count", ia, []string{"overflows"},
			func(w *world, p, q uintptr) error {
				return coll.ReduceScatter(w.comms[0], p, q, 1<<62, gccl.Int8, gccl.Sum, w.streams[0])
			}),
		argCase("unknown-type", "AllReduce with data type 12", "datatype", ia, []string{"unknown data type 12", "gccl.DataTypes()"},
			func(w *world, p, q uintptr) error {
				return coll.AllReduce(w.comms[0], p, q, 4, gccl.DataType(12), gccl.Sum, w.streams[0])
			}),
		argCase("negative-type", "AllGather with data type -1", "datatype", ia, []string{"unknown data type -1"},
			func(w *world, p, q uintptr) error {
				return coll.AllGather(w.comms[0], p, q, 4, gccl.DataType(-1), w.streams[0])
			}),
		argCase("send-bad-type", "Send with data type 99", "datatype", ia, []string{"Send: unknown data type 99"},
			func(w *world, p, q uintptr) error {
				return p2p.Send(w.comms[0], p, 4, gccl.DataType(99), 1, w.streams[0])
			}),
		argCase("unknown-op", "AllReduce with reduction operator 99", "op", ia, []string{"unknown reduction operator 99"},
			func(w *world, p, q uintptr) error {
				return coll.AllReduce(w.comms[0], p, q, 4, gccl.Int32, gccl.RedOp(99), w.streams[0])
			}),
		argCase("negative-op", "Reduce with reduction operator -1", "op", ia, []string{"unknown reduction operator -1"},
			func(w *world, p, q uintptr) error {
				return coll.Reduce(w.comms[0], p, q, 4, gccl.Int32, gccl.RedOp(-1), 0, w.streams[0])
			}),
		argCase("destroyed-op", "AllReduce with a CreatePreMulSum operator already destroyed", "op", ia, []string{"unknown reduction operator"},
			func(w *world, p, q uintptr) error {
				op, err := destroyedOp(w, p)
				if err != nil {
					return err
				}
				return coll.AllReduce(w.comms[0], p, q, 4, gccl.Float32, op, w.streams[0])
			}),
		argCase("premulsum-other-type", "AllReduce of float64 with a CreatePreMulSum operator made for float32", "op", ia,
			[]string{"was made for float32, not float64"},
			func(w *world, p, q uintptr) error {
				op, err := coll.CreatePreMulSum(w.comms[0], p, gccl.Float32, coll.ScalarHostImmediate)
				if err != nil {
					return err
				}
				defer coll.DestroyRedOp(w.comms[0], op)
				return coll.AllReduce(w.comms[0], p, q, 4, gccl.Float64, op, w.streams[0])
			}),
		argCase("premulsum-nil-scalar", "CreatePreMulSum with a nil scalar", "scalar", ia, []string{"scalar is nil"},
			func(w *world, p, q uintptr) error {
				_, err := coll.CreatePreMulSum(w.comms[0], 0, gccl.Float32, coll.ScalarHostImmediate)
				return err
			}),
		argCase("destroy-op-twice", "DestroyRedOp of the same operator twice", "op", ia, []string{"was not made by CreatePreMulSum on this communicator (or was destroyed)"},
			func(w *world, p, q uintptr) error {
				op, err := destroyedOp(w, p)
				if err != nil {
					return err
				}
				return coll.DestroyRedOp(w.comms[0], op)
			}),
		argCase("root-too-large", "Broadcast with root 2 on a 2-rank communicator", "root", ia,
			[]string{"root 2 is not a rank of this 2-rank communicator"},
			func(w *world, p, q uintptr) error {
				return coll.Broadcast(w.comms[0], p, q, 4, gccl.Int32, 2, w.streams[0])
			}),
		argCase("negative-root", "Reduce with root -1", "root", ia, []string{"root -1 is not a rank"},
			func(w *world, p, q uintptr) error {
				return coll.Reduce(w.comms[0], p, q, 4, gccl.Int32, gccl.Max, -1, w.streams[0])
			}),
		argCase("scatter-bad-root", "Scatter with root 5", "root", ia, []string{"root 5 is not a rank"},
			func(w *world, p, q uintptr) error {
				return p2p.Scatter(w.comms[0], p, q, 4, gccl.Int32, 5, w.streams[0])
			}),
		argCase("send-peer-too-large", "Send to peer 2 on a 2-rank communicator", "peer", ia,
			[]string{"peer 2 is not a rank of this 2-rank communicator"},
			func(w *world, p, q uintptr) error { return p2p.Send(w.comms[0], p, 4, gccl.Int32, 2, w.streams[0]) }),
		argCase("recv-negative-peer", "Recv from peer -1", "peer", ia, []string{"peer -1 is not a rank"},
			func(w *world, p, q uintptr) error { return p2p.Recv(w.comms[0], q, 4, gccl.Int32, -1, w.streams[0]) }),
		argCase("neighbor-bad-peer", "NeighborExchange with peers [1, 7]", "peer", ia, []string{"peer 7 is not a rank"},
			func(w *world, p, q uintptr) error {
				return p2p.NeighborExchange(w.comms[0], p, q, 4, gccl.Int32, []int{1, 7}, w.streams[0])
			}),
		argCase("alltoallv-short-vector", "AllToAllv with 1 entry in sendcounts on 2 ranks", "sendcounts", ia,
			[]string{"has 1 entries; want one per rank (2)"},
			func(w *world, p, q uintptr) error {
				return p2p.AllToAllv(w.comms[0], p, []int{4}, []int{0, 4}, q, []int{4, 4}, []int{0, 4}, gccl.Int32, w.streams[0])
			}),
		argCase("alltoallv-negative-count", "AllToAllv with recvcounts [4, -4]", "recvcounts", ia, []string{"entry 1 is negative (-4)"},
			func(w *world, p, q uintptr) error {
				return p2p.AllToAllv(w.comms[0], p, []int{4, 4}, []int{0, 4}, q, []int{4, -4}, []int{0, 4}, gccl.Int32, w.streams[0])
			}),
		argCase("unknown-stream", "AllReduce on stream 0xdead, which no NewStream made", "stream", ia, []string{"unknown host stream handle 0xdead"},
			func(w *world, p, q uintptr) error {
				return coll.AllReduce(w.comms[0], p, q, 4, gccl.Int32, gccl.Sum, 0xdead)
			}),
	}
}

// destroyedOp is a float32 CreatePreMulSum operator of rank 0's
// communicator (scalar at p), already destroyed.
func destroyedOp(w *world, p uintptr) (gccl.RedOp, error) {
	op, err := coll.CreatePreMulSum(w.comms[0], p, gccl.Float32, coll.ScalarHostImmediate)
	if err != nil {
		return op, err
	}
	return op, coll.DestroyRedOp(w.comms[0], op)
}
