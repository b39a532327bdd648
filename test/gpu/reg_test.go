package gpu

import (
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/internal/regcache"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// regChunk is 64 MiB per rank, registered once; every case runs on
// sub-buffers of it at an offset that is the same on every rank.
const regChunk = 64 << 20

// regSetup registers one chunk per rank (alloc makes it) and returns it
// with its registration (from the communicator's cache), deregistered
// after the test.
func regSetup(t *testing.T, cm *comm.Comm, alloc func(int) (uintptr, error), free func(uintptr) error) (uintptr, *regcache.Registration) {
	p, err := alloc(regChunk)
	require.NoError(t, err)
	h, err := bufreg.Register(cm, p, regChunk)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, bufreg.Deregister(h))
		require.NoError(t, free(p))
	})
	reg, _, ok := commlink.Regs(cm).Lookup(p, regChunk)
	require.True(t, ok, "registered in the communicator's cache")
	return p, reg
}

// TestRegisteredCollectives registers one chunk per rank (cudaMalloc and
// bufreg.MemAlloc memory) and runs all-reduce, all-gather, broadcast and
// reduce-scatter on random data at several sizes, in and out of place,
// checking every element and the engine's counters: up to the one-shot
// limit the one-shot kernels run it; past it, with peers mapped, no byte is
// staged and every op runs zero-copy. cuMem memory of other
// processes cannot be mapped (gccl passes no file descriptors between
// processes yet), so there the ops must be correct and staged. With one
// rank only the results are checked (and that in place runs nothing).
func TestRegisteredCollectives(t *testing.T) {
	if set := env.Get(); set.GPULLMax != 0 || set.Algos != algo.AllAlgorithms || set.Protos != algo.AllProtocols {
		t.Skip("TestRegisteredCollectives expects the default kernel choice (GCCL_GPU_LL_MAX, GCCL_ALGO and GCCL_PROTO unset)")
	}
	for _, mem := range []string{"cudamalloc", "memalloc"} {
		t.Run(mem, func(t *testing.T) {
			cm := world(t)
			dev := cm.Device()
			alloc, free := dev.Alloc, dev.Free
			if mem == "memalloc" {
				alloc = func(n int) (uintptr, error) { return bufreg.MemAlloc(dev, n) }
				free = bufreg.MemFree
			}
			chunk, reg := regSetup(t, cm, alloc, free)
			zeroCopy := reg.Peers != nil
			if mem == "cudamalloc" && cm.Count() > 1 {
				require.True(t, zeroCopy, "cudaMalloc registrations are mapped by every peer")
			}
			s := harness.NewBuffers(t, dev).Stream()
			var failures []error
			for i, c := range regCases(cm.Count()) {
				if err := runRegistered(cm, dev, s, chunk, c, uint64(i), zeroCopy); err != nil {
					failures = append(failures, fmt.Errorf("%v: %w", c, err))
				}
			}
			harness.Agree(t, failures)
		})
	}
}

// oneShotMax is the default GCCL_GPU_LL_MAX: operations up to this many
// bytes per rank take the one-shot kernels whatever their registration.
const oneShotMax = 128 << 10

func regCases(n int) []harness.Case {
	var cases []harness.Case
	for _, count := range []int{1, 7, 1000, 65537, 1000003} {
		for _, k := range []string{"allreduce", "allgather", "broadcast", "reducescatter"} {
			for _, ip := range []bool{false, true} {
				dt, op := gccl.Float32, gccl.Sum
				if len(cases)%3 == 1 {
					dt, op = gccl.Int32, gccl.Max
				}
				if len(cases)%3 == 2 && harness.Reduces(k) {
					dt, op = gccl.BFloat16, gccl.Sum
				}
				cases = append(cases, harness.Case{Kind: k, T: dt, Op: op, Count: count, Root: len(cases) % n, InPlace: ip, Seed: uint64(len(cases)) + 100})
			}
		}
	}
	return cases
}

// runRegistered runs one case on sub-buffers of the chunk and checks it.
func runRegistered(cm *comm.Comm, dev device.Device, s gccl.Stream, chunk uintptr, c harness.Case, i uint64, zeroCopy bool) error {
	n, me, es := cm.Count(), cm.Rank(), c.T.Size()
	sendN, recvN := c.Count, c.Count
	switch c.Kind {
	case "allgather":
		recvN = n * c.Count
	case "reducescatter":
		sendN = n * c.Count
	}
	off := uintptr(256 * (1 + i%7)) // the same on every rank
	send, recv := chunk+off, chunk+off+uintptr((sendN*es+255)/256*256)
	if c.InPlace {
		send = recv
		switch c.Kind {
		case "allgather":
			send = recv + uintptr(me*c.Count*es)
		case "reducescatter":
			recv = send + uintptr(me*c.Count*es)
		}
	}
	in := harness.Inputs(c.Seed, n, c.T, sendN)
	if err := firstError(dev.CopyIn(recv, harness.PoisonBytes(recvN*es)), dev.CopyIn(send, in[me])); err != nil {
		return err
	}
	before := engineStats(cm)
	var err error
	switch c.Kind {
	case "allreduce":
		err = coll.AllReduce(cm, send, recv, c.Count, c.T, c.Op, s)
	case "allgather":
		err = coll.AllGather(cm, send, recv, c.Count, c.T, s)
	case "broadcast":
		err = coll.Broadcast(cm, send, recv, c.Count, c.T, c.Root, s)
	case "reducescatter":
		err = coll.ReduceScatter(cm, send, recv, c.Count, c.T, c.Op, s)
	}
	if err = firstError(err, mpiboot.Wait(dev, s, 0), cm.AsyncError()); err != nil {
		return err
	}
	got := make([]byte, recvN*es)
	if err := dev.CopyOut(got, recv); err != nil {
		return err
	}
	if err := reduce.Check(got, c.Expected(me, n), c.T, n); err != nil {
		return err
	}
	after := engineStats(cm)
	staged, zc := after.StagedBytes-before.StagedBytes, after.ZeroCopyOps-before.ZeroCopyOps
	if n == 1 { // one rank copies its input (the path is the engine's choice), in place nothing runs
		if c.InPlace && (staged != 0 || zc != 0) {
			return fmt.Errorf("one rank in place staged %d bytes and ran %d zero-copy ops; want nothing run", staged, zc)
		}
		return nil
	}
	if c.Count*es <= oneShotMax { // the one-shot kernels take it, registered or not
		if zc != 0 {
			return fmt.Errorf("op of %d bytes per rank ran %d zero-copy ops; want the one-shot kernel", c.Count*es, zc)
		}
		return nil
	}
	if zeroCopy && (staged != 0 || zc != 1) {
		return fmt.Errorf("registered op staged %d bytes and ran %d zero-copy ops; want 0 and 1", staged, zc)
	}
	if !zeroCopy && (staged == 0 || zc != 0) {
		return fmt.Errorf("unmapped registration: staged %d bytes, %d zero-copy ops; want staging", staged, zc)
	}
	return nil
}

// TestRegisteredMismatch: rank 0 passes its registered buffers at another
// offset than the other ranks; the kernels compare the registration keys
// at their first barrier and the communicator reports
// gccl.ErrInvalidUsage (on the next launch and in AsyncError) instead of
// corrupting memory.
func TestRegisteredMismatch(t *testing.T) {
	cm := world(t)
	dev := cm.Device()
	if cm.Count() < 2 {
		t.Skip("needs two ranks")
	}
	chunk, reg := regSetup(t, cm, dev.Alloc, dev.Free)
	require.NotNil(t, reg.Peers)
	s := harness.NewBuffers(t, dev).Stream()
	off := uintptr(4096)
	if cm.Rank() == 0 {
		off = 8192
	}
	const count = 100_000
	err := coll.AllReduce(cm, chunk+off, chunk+off+1<<20, count, gccl.Float32, gccl.Sum, s)
	if err == nil {
		err = mpiboot.Wait(dev, s, 0)
	}
	if err == nil { // the kernel's verdict surfaces at the next launch
		err = coll.AllReduce(cm, chunk, chunk, 1, gccl.Float32, gccl.Sum, s)
	}
	var failures []error
	if gccl.Code(err) != gccl.InvalidUsage || gccl.Code(cm.AsyncError()) != gccl.InvalidUsage {
		failures = append(failures, fmt.Errorf("mismatched offsets: got %v (async %v), want invalid usage", err, cm.AsyncError()))
	}
	harness.Agree(t, failures)
}
