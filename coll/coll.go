package coll

import (
	"reflect"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/engine"
)

// Comm is what the operations need from a communicator; *comm.Comm is one.
type Comm interface {
	Engine() *engine.Engine
}

// statuser is the optional part of Comm that *comm.Comm implements: nil
// when ready, gccl.ErrInProgress during a nonblocking init, else why not.
type statuser interface {
	Status() error
}

// Nonblocking reports whether c is a nonblocking communicator
// (comm.Config.Blocking false), whose group launches return gccl.ErrInProgress.
func Nonblocking(c Comm) bool {
	cc, ok := c.(interface{ Config() comm.Config })
	if !ok || c == nil {
		return false
	}
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
		return false
	}
	b := cc.Config().Blocking
	return b != nil && !*b
}

// EngineOf returns c's engine, or a typed error for a nil or closed communicator.
func EngineOf(c Comm) (*engine.Engine, error) {
	if c == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "comm", "communicator is nil")
	}
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, gccl.Errorf(gccl.InvalidArgument, "comm", "communicator is nil")
	}
	if s, ok := c.(statuser); ok {
		if err := s.Status(); err != nil {
			if gccl.Code(err) == gccl.InProgress {
				return nil, gccl.Errorf(gccl.InProgress, "comm", "communicator initialisation is still in progress; poll Status until it returns nil, then issue operations")
			}
			return nil, err
		}
	}
	e := c.Engine()
	if e != nil && !e.Closed() {
		return e, nil
	}
	// An open communicator whose engine was aborted under it (a lost peer)
	// reports that cause, as every survivor's AsyncError does.
	if e != nil && e.AsyncError() != nil {
		return nil, e.AsyncError()
	}
	return nil, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator is closed or aborted; create a new one")
}

func launch(c Comm, op engine.Op) error {
	e, err := EngineOf(c)
	if err != nil {
		return err
	}
	return e.Launch([]engine.Op{op})
}

// AllReduce reduces count elements of every rank's sendbuff with op and
// leaves the result in every rank's recvbuff.
func AllReduce(c Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) error {
	return launch(c, engine.Op{Kind: engine.AllReduce, Send: sendbuff, Recv: recvbuff, Count: count, Type: t, Op: op, Stream: s})
}

// Broadcast copies count elements of root's sendbuff to every rank's recvbuff
// (sendbuff is only read on root).
func Broadcast(c Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, root int, s gccl.Stream) error {
	return launch(c, engine.Op{Kind: engine.Broadcast, Send: sendbuff, Recv: recvbuff, Count: count, Type: t, Root: root, Stream: s})
}

// Reduce reduces count elements of every rank's sendbuff with op into root's
// recvbuff (recvbuff is only written on root).
func Reduce(c Comm, sendbuff, recvbuff uintptr, count int, t gccl.DataType, op gccl.RedOp, root int, s gccl.Stream) error {
	return launch(c, engine.Op{Kind: engine.Reduce, Send: sendbuff, Recv: recvbuff, Count: count, Type: t, Op: op, Root: root, Stream: s})
}

// AllGather gathers sendcount elements from every rank into every rank's
// recvbuff, rank i's at offset i*sendcount.
func AllGather(c Comm, sendbuff, recvbuff uintptr, sendcount int, t gccl.DataType, s gccl.Stream) error {
	return launch(c, engine.Op{Kind: engine.AllGather, Send: sendbuff, Recv: recvbuff, Count: sendcount, Type: t, Stream: s})
}

// ReduceScatter reduces nranks*recvcount elements of every rank's sendbuff
// with op and leaves block i of the result in rank i's recvbuff.
func ReduceScatter(c Comm, sendbuff, recvbuff uintptr, recvcount int, t gccl.DataType, op gccl.RedOp, s gccl.Stream) error {
	return launch(c, engine.Op{Kind: engine.ReduceScatter, Send: sendbuff, Recv: recvbuff, Count: recvcount, Type: t, Op: op, Stream: s})
}
