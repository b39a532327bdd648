package mpi

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/p2p"
	"github.com/gccl/gccl/test/harness"
)

// wait waits for s with MPI progress and wraps the error with what ran.
func wait(cm *comm.Comm, s gccl.Stream, what string, launchErr error) error {
	err := launchErr
	if err == nil {
		err = mpiboot.Wait(cm.Device(), s, 0)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// TestRingExchange: in one group each rank sends to the next and receives
// from the previous, at several shifts and counts.
func TestRingExchange(t *testing.T) {
	cm := world(t)
	rank, n := cm.Rank(), cm.Count()
	var failures []error
	for shift := 1; shift <= max(n-1, 1); shift++ {
		for _, count := range []int{0, 1, 4097} {
			seed := uint64(1000*shift + count)
			bufs := harness.NewBuffers(t, cm.Device())
			s := bufs.Stream()
			send := bufs.Alloc(4*count, harness.Input(seed, rank, gccl.Float32, count))
			recv := bufs.Alloc(4*count, nil)
			to, from := (rank+shift)%n, (rank-shift+n)%n
			g := group.New()
			g.Send(cm, send, count, gccl.Float32, to, s)
			g.Recv(cm, recv, count, gccl.Float32, from, s)
			what := fmt.Sprintf("ring shift %d count %d", shift, count)
			if err := wait(cm, s, what, g.End()); err != nil {
				failures = append(failures, err)
				continue
			}
			if got, want := bufs.Read(recv, 4*count), harness.Input(seed, from, gccl.Float32, count); !bytes.Equal(got, want) {
				failures = append(failures, fmt.Errorf("%s: data from rank %d differs", what, from))
			}
		}
	}
	harness.Agree(t, failures)
}

func TestAllToAll(t *testing.T) {
	cm := world(t)
	rank, n := cm.Rank(), cm.Count()
	var failures []error
	for _, count := range []int{1, 33} {
		bufs := harness.NewBuffers(t, cm.Device())
		s := bufs.Stream()
		// Rank r's block j goes to rank j.
		send := bufs.Alloc(8*count*n, harness.Input(uint64(count), rank, gccl.Int64, count*n))
		recv := bufs.Alloc(8*count*n, nil)
		what := fmt.Sprintf("alltoall count %d", count)
		if err := wait(cm, s, what, p2p.AllToAll(cm, send, recv, count, gccl.Int64, s)); err != nil {
			failures = append(failures, err)
			continue
		}
		got := bufs.Read(recv, 8*count*n)
		for j := range n {
			want := harness.Input(uint64(count), j, gccl.Int64, count*n)[8*count*rank : 8*count*(rank+1)]
			if !bytes.Equal(got[8*count*j:8*count*(j+1)], want) {
				failures = append(failures, fmt.Errorf("%s: block from rank %d differs", what, j))
			}
		}
	}
	harness.Agree(t, failures)
}

// TestGroupOfCollectives launches an AllReduce and a Broadcast as one group.
func TestGroupOfCollectives(t *testing.T) {
	cm := world(t)
	rank, n := cm.Rank(), cm.Count()
	const count = 1000
	bufs := harness.NewBuffers(t, cm.Device())
	s := bufs.Stream()
	a := bufs.Alloc(8*count, harness.Input(7, rank, gccl.Float64, count))
	b := bufs.Alloc(4*count, harness.Input(8, rank, gccl.Int32, count))
	root := n - 1
	g := group.New()
	g.AllReduce(cm, a, a, count, gccl.Float64, gccl.Max, s)
	g.Broadcast(cm, b, b, count, gccl.Int32, root, s)
	var failures []error
	if err := wait(cm, s, "group", g.End()); err != nil {
		failures = append(failures, err)
	} else {
		want := reduce.Reference(harness.Inputs(7, n, gccl.Float64, count), gccl.Float64, gccl.Max, 0)
		if err := reduce.Check(bufs.Read(a, 8*count), want, gccl.Float64, n); err != nil {
			failures = append(failures, fmt.Errorf("grouped allreduce: %w", err))
		}
		if !bytes.Equal(bufs.Read(b, 4*count), harness.Input(8, root, gccl.Int32, count)) {
			failures = append(failures, fmt.Errorf("grouped broadcast differs from root %d's data", root))
		}
	}
	harness.Agree(t, failures)
}

// TestSeveralDevicesPerProcess: two communicator ranks per process
// (mpiboot.NewComms, or both on -gccl.device) reduce together in one group.
func TestSeveralDevicesPerProcess(t *testing.T) {
	const ngpus, count = 2, 513
	requireDevices(t, ngpus)
	comms := harness.LocalComms(t, ngpus, config(), *oneDevice)
	bufs := make([]*harness.Buffers, ngpus)
	streams := make([]gccl.Stream, ngpus)
	ptrs := make([]uintptr, ngpus)
	g := group.New()
	for i, cm := range comms {
		bufs[i] = harness.NewBuffers(t, cm.Device())
		streams[i] = bufs[i].Stream()
		ptrs[i] = bufs[i].Alloc(4*count, harness.Input(9, cm.Rank(), gccl.Uint32, count))
		g.AllReduce(cm, ptrs[i], ptrs[i], count, gccl.Uint32, gccl.Sum, streams[i])
	}
	var failures []error
	launchErr := g.End()
	nranks := comms[0].Count()
	want := reduce.Reference(harness.Inputs(9, nranks, gccl.Uint32, count), gccl.Uint32, gccl.Sum, 0)
	for i, cm := range comms {
		if err := wait(cm, streams[i], fmt.Sprintf("rank %d", cm.Rank()), launchErr); err != nil {
			failures = append(failures, err)
			continue
		}
		if err := reduce.Check(bufs[i].Read(ptrs[i], 4*count), want, gccl.Uint32, nranks); err != nil {
			failures = append(failures, fmt.Errorf("rank %d: %w", cm.Rank(), err))
		}
	}
	harness.Agree(t, failures)
}
