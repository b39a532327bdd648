// Package ops builds the engine operations that the public packages
// launch: one constructor per kind, so that package coll, package p2p,
// package group and the send/receive patterns of package internal/pattern
// describe an AllReduce (or a Send, ...) the same way. The constructors
// only fill an engine.Op; the engine validates it when it is launched.
package ops

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
)

// AllReduce: count elements of every rank's send, reduced with op, in every rank's recv.
func AllReduce(send, recv uintptr, count int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) engine.Op {
	return engine.Op{Kind: algo.AllReduce, Send: send, Recv: recv, Count: count, Type: t, Op: op, Stream: s}
}

// Broadcast: count elements of root's send in every rank's recv.
func Broadcast(send, recv uintptr, count int, t gccl.DataType, root int, s gccl.Stream) engine.Op {
	return engine.Op{Kind: algo.Broadcast, Send: send, Recv: recv, Count: count, Type: t, Root: root, Stream: s}
}

// Reduce: count elements of every rank's send, reduced with op, in root's recv.
func Reduce(send, recv uintptr, count int, t gccl.DataType, op gccl.RedOp, root int, s gccl.Stream) engine.Op {
	return engine.Op{Kind: algo.Reduce, Send: send, Recv: recv, Count: count, Type: t, Op: op, Root: root, Stream: s}
}

// AllGather: sendcount elements of every rank's send, rank i's at block i of every recv.
func AllGather(send, recv uintptr, sendcount int, t gccl.DataType, s gccl.Stream) engine.Op {
	return engine.Op{Kind: algo.AllGather, Send: send, Recv: recv, Count: sendcount, Type: t, Stream: s}
}

// ReduceScatter: block i (recvcount elements) of the reduction of every
// rank's send in rank i's recv.
func ReduceScatter(send, recv uintptr, recvcount int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) engine.Op {
	return engine.Op{Kind: algo.ReduceScatter, Send: send, Recv: recv, Count: recvcount, Type: t, Op: op, Stream: s}
}

// Send: count elements at send to peer.
func Send(send uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) engine.Op {
	return engine.Op{Kind: algo.P2PSend, Send: send, Count: count, Type: t, Peer: peer, Stream: s}
}

// Recv: count elements from peer into recv.
func Recv(recv uintptr, count int, t gccl.DataType, peer int, s gccl.Stream) engine.Op {
	return engine.Op{Kind: algo.P2PRecv, Recv: recv, Count: count, Type: t, Peer: peer, Stream: s}
}
