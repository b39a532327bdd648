package coll

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/ops"
)

func launch(c *comm.Comm, op engine.Op) error {
	e, err := commlink.Engine(c)
	if err != nil {
		return err
	}
	return e.Launch([]engine.Op{op})
}

// AllReduce reduces count elements of every rank's sendbuff with op and
// leaves the result in every rank's recvbuff.
func AllReduce(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) error {
	return launch(c, ops.AllReduce(sendbuff, recvbuff, count, t, op, s))
}

// Broadcast copies count elements of root's sendbuff to every rank's recvbuff
// (sendbuff is only read on root).
func Broadcast(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) error {
	return launch(c, ops.Broadcast(sendbuff, recvbuff, count, t, root, s))
}

// Reduce reduces count elements of every rank's sendbuff with op into root's
// recvbuff (recvbuff is only written on root).
func Reduce(c *comm.Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, op gccl.RedOp, root int, s gccl.Stream) error {
	return launch(c, ops.Reduce(sendbuff, recvbuff, count, t, op, root, s))
}

// AllGather gathers sendcount elements from every rank into every rank's
// recvbuff, rank i's at offset i*sendcount.
func AllGather(c *comm.Comm, sendbuff, recvbuff uintptr, sendcount int, t gccl.DataType, s gccl.Stream) error {
	return launch(c, ops.AllGather(sendbuff, recvbuff, sendcount, t, s))
}

// ReduceScatter reduces nranks*recvcount elements of every rank's sendbuff
// with op and leaves block i of the result in rank i's recvbuff.
func ReduceScatter(c *comm.Comm, sendbuff, recvbuff uintptr, recvcount int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) error {
	return launch(c, ops.ReduceScatter(sendbuff, recvbuff, recvcount, t, op, s))
}
