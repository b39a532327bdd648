package fault

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/p2p"
)

// Disagreement is a caller mistake in which the ranks of one communicator
// call operations that do not match, and what gccl answers: each rank runs
// its own Calls (on two ranks, 0 and 1) with Bufs of DisagreeBytes.
// Reporters must fail with gccl.ErrInvalidUsage naming both ranks (the
// rank that refused a message, or the peer that it told); the
// other rank may succeed (a Send whose bytes the peer refused after they
// left) or fail with ErrInvalidUsage or ErrRemote; no later operation may
// return stale data. The rows feed a bad-input table.
type Disagreement struct {
	Name      string
	Did       string // what the caller did
	Answer    string // what gccl answers
	Reporters []int  // ranks that must return ErrInvalidUsage
	// NextOp: on some paths nothing mismatched is received during the
	// operations themselves (they may succeed); the reporters' next,
	// matched operation must then fail with ErrInvalidUsage.
	NextOp bool
	Calls  func(rank int, c *comm.Comm, b *Bufs) error
}

// DisagreeBytes is the size of each buffer a Disagreement's calls use.
const DisagreeBytes = 16 << 10

// both runs f on rank 0 and g on rank 1.
func both(f, g func(c *comm.Comm, b *Bufs) error) func(int, *comm.Comm, *Bufs) error {
	return func(rank int, c *comm.Comm, b *Bufs) error {
		if rank == 0 {
			return f(c, b)
		}
		return g(c, b)
	}
}

func allReduce(count int, t gccl.DataType, op gccl.RedOp) func(*comm.Comm, *Bufs) error {
	return func(c *comm.Comm, b *Bufs) error { return coll.AllReduce(c, b.Send, b.Recv, count, t, op, b.S) }
}

func broadcast(count, root int) func(*comm.Comm, *Bufs) error {
	return func(c *comm.Comm, b *Bufs) error {
		return coll.Broadcast(c, b.Send, b.Recv, count, gccl.Int32, root, b.S)
	}
}

func allGather(count int) func(*comm.Comm, *Bufs) error {
	return func(c *comm.Comm, b *Bufs) error { return coll.AllGather(c, b.Send, b.Recv, count, gccl.Int32, b.S) }
}

func send(count int, t gccl.DataType, peer int) func(*comm.Comm, *Bufs) error {
	return func(c *comm.Comm, b *Bufs) error { return p2p.Send(c, b.Send, count, t, peer, b.S) }
}

func recv(count int, t gccl.DataType, peer int) func(*comm.Comm, *Bufs) error {
	return func(c *comm.Comm, b *Bufs) error { return p2p.Recv(c, b.Recv, count, t, peer, b.S) }
}

// seq runs fs one after the other on the rank's stream.
func seq(fs ...func(*comm.Comm, *Bufs) error) func(*comm.Comm, *Bufs) error {
	return func(c *comm.Comm, b *Bufs) error {
		for _, f := range fs {
			if err := f(c, b); err != nil {
				return err
			}
		}
		return nil
	}
}

const mismatchAnswer = "ErrInvalidUsage on both ranks: \"rank R received <op> from rank P while running <op>\"; the communicator fails"

// Disagreements are the ways two ranks can disagree.
var Disagreements = []Disagreement{
	{"count", "AllReduce of 1024 float32 on rank 0, 512 on rank 1", mismatchAnswer, []int{0, 1}, false,
		both(allReduce(1024, gccl.Float32, gccl.Sum), allReduce(512, gccl.Float32, gccl.Sum))},
	{"type", "AllReduce of 1024 float32 on rank 0, 1024 int32 on rank 1", mismatchAnswer, []int{0, 1}, false,
		both(allReduce(1024, gccl.Float32, gccl.Sum), allReduce(1024, gccl.Int32, gccl.Sum))},
	{"operator", "AllReduce with Sum on rank 0, Max on rank 1", mismatchAnswer, []int{0, 1}, false,
		both(allReduce(1024, gccl.Int32, gccl.Sum), allReduce(1024, gccl.Int32, gccl.Max))},
	{"root-other", "Broadcast with root 1 on rank 0, root 0 on rank 1 (each names the other)",
		"zero-copy: ErrInvalidUsage on both ranks; step schedules: both only receive, ErrTimeout on both naming the peer waited for",
		nil, false, both(broadcast(1024, 1), broadcast(1024, 0))},
	{"root-self", "Broadcast with root 0 on rank 0, root 1 on rank 1 (each its own root)",
		"zero-copy: ErrInvalidUsage on both ranks at once; step schedules: each root only sends, so the Broadcast returns the root's own data and the next operation fails with ErrInvalidUsage on both ranks (the unread message is refused)",
		[]int{0, 1}, true, both(broadcast(1024, 0), broadcast(1024, 1))},
	{"kind", "AllReduce(1024 int32) on rank 0, AllGather(512 int32) on rank 1", mismatchAnswer, []int{0, 1}, false,
		both(allReduce(1024, gccl.Int32, gccl.Sum), allGather(512))},
	{"order", "AllReduce then Broadcast on rank 0, Broadcast then AllReduce on rank 1", mismatchAnswer, []int{0, 1}, false,
		both(seq(allReduce(1024, gccl.Int32, gccl.Sum), broadcast(1024, 0)), seq(broadcast(1024, 0), allReduce(1024, gccl.Int32, gccl.Sum)))},
	{"skipped", "AllReduce then AllGather on rank 0, only the AllGather on rank 1", mismatchAnswer, []int{0, 1}, false,
		both(seq(allReduce(1024, gccl.Int32, gccl.Sum), allGather(256)), allGather(256))},
	{"send-more", "Send of 1024 int32 to rank 1, which receives 512", "ErrInvalidUsage on the receiver naming both ranks, on the sender when it next uses the connection; the communicators fail", []int{1}, false,
		both(send(1024, gccl.Int32, 1), recv(512, gccl.Int32, 0))},
	{"send-less", "Send of 512 int32 to rank 1, which receives 1024", "ErrInvalidUsage on the receiver naming both ranks, on the sender when it next uses the connection; the communicators fail", []int{1}, false,
		both(send(512, gccl.Int32, 1), recv(1024, gccl.Int32, 0))},
	{"send-type", "Send of 1024 int32 to rank 1, which receives 1024 int8", "ErrInvalidUsage on the receiver naming both ranks (sizes differ); the communicators fail", []int{1}, false,
		both(send(1024, gccl.Int32, 1), recv(1024, gccl.Int8, 0))},
	{"send-vs-recv", "Recv from rank 1 on rank 0 while rank 1 receives from rank 0 (both Recv)", "ErrTimeout on both ranks naming the peer waited for (no message ever comes)", nil, false,
		both(recv(256, gccl.Int32, 1), recv(256, gccl.Int32, 0))},
}
