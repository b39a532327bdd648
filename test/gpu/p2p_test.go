package gpu

import (
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// TestAllToAllGroups: in one group every rank sends a distinct random block
// to every rank (itself included) and receives one from each, at counts
// from 1 element to more than the staging area holds.
func TestAllToAllGroups(t *testing.T) {
	cm := world(t)
	rank, n := cm.Rank(), cm.Count()
	bufs := harness.NewBuffers(t, cm.Device())
	s := bufs.Stream()
	for ci, count := range []int{1, 7, 1000003, 3 << 20} {
		dt := []gccl.DataType{gccl.Float32, gccl.Int8, gccl.Float64, gccl.Uint32}[ci]
		es := dt.Size()
		block := func(from, to int) []byte { return harness.Input(uint64(100+ci), from*n+to, dt, count) }
		var sendAll []byte
		for to := range n {
			sendAll = append(sendAll, block(rank, to)...)
		}
		send := bufs.Alloc(len(sendAll), sendAll)
		recv := bufs.Alloc(len(sendAll), nil)
		g := group.New()
		for p := range n {
			peer := (rank + p) % n // a different issue order on every rank
			g.Send(cm, send+uintptr(peer*count*es), count, dt, peer, s)
			g.Recv(cm, recv+uintptr(peer*count*es), count, dt, peer, s)
		}
		err := g.End()
		if err == nil {
			err = mpiboot.Wait(cm.Device(), s, 0)
		}
		var failures []error
		if err != nil {
			failures = append(failures, fmt.Errorf("count %d: %w", count, err))
		} else {
			got := bufs.Read(recv, len(sendAll))
			for from := range n {
				if err := reduce.Check(got[from*count*es:(from+1)*count*es], block(from, rank), dt, 1); err != nil {
					failures = append(failures, fmt.Errorf("count %d from %d: %w", count, from, err))
				}
			}
		}
		require.True(t, harness.Agree(t, failures))
	}
}

// TestRingShifts: each rank sends to rank+k and receives from rank-k, one
// Send/Recv pair per launch, for every shift k.
func TestRingShifts(t *testing.T) {
	cm := world(t)
	rank, n := cm.Rank(), cm.Count()
	bufs := harness.NewBuffers(t, cm.Device())
	s := bufs.Stream()
	const count = 100_003
	for k := 1; k < n; k++ {
		to, from := (rank+k)%n, (rank-k+n)%n
		send := bufs.Alloc(4*count, harness.Input(uint64(k), rank, gccl.Float32, count))
		recv := bufs.Alloc(4*count, nil)
		g := group.New()
		g.Recv(cm, recv, count, gccl.Float32, from, s)
		g.Send(cm, send, count, gccl.Float32, to, s)
		err := g.End()
		if err == nil {
			err = mpiboot.Wait(cm.Device(), s, 0)
		}
		var failures []error
		if err != nil {
			failures = append(failures, fmt.Errorf("shift %d: %w", k, err))
		} else if err := reduce.Check(bufs.Read(recv, 4*count), harness.Input(uint64(k), from, gccl.Float32, count), gccl.Float32, 1); err != nil {
			failures = append(failures, fmt.Errorf("shift %d: %w", k, err))
		}
		require.True(t, harness.Agree(t, failures))
	}
}
