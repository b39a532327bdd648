package gpu

import (
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
)

// TestDisagreeingOperations: ranks that launch different collectives get
// gccl.ErrInvalidUsage (at the next launch and in AsyncError; across hosts
// a rank whose kernel only sent, at its next operation) instead of paired
// kernels that give wrong data or time out.
// The pipelined kernels compare the operation's descriptor at their first
// barrier always; the one-shot and push kernels with
// GCCL_GPU_CHECK_DESCRIPTORS=1, which puts a check kernel before them.
// Across hosts (run it in gccl-bed) the ring kernels check the key every
// slot carries.
func TestDisagreeingOperations(t *testing.T) {
	requireGPUs(t, 1)
	if _, size := mpiboot.World(); size < 2 {
		t.Skip("needs two ranks")
	}
	const big, push, small = 1 << 20, 100_000, 1000 // float32: pipelined, push, one-shot
	type op func(cm *comm.Comm, send, recv uintptr, s gccl.Stream) error
	allReduce := func(n int) op {
		return func(cm *comm.Comm, send, recv uintptr, s gccl.Stream) error {
			return coll.AllReduce(cm, send, recv, n, gccl.Float32, gccl.Sum, s)
		}
	}
	broadcast := func(root int) op {
		return func(cm *comm.Comm, send, recv uintptr, s gccl.Stream) error {
			return coll.Broadcast(cm, send, recv, small, gccl.Float32, root, s)
		}
	}
	reduce := func(cm *comm.Comm, send, recv uintptr, s gccl.Stream) error {
		return coll.Reduce(cm, send, recv, big, gccl.Float32, gccl.Sum, 0, s)
	}
	cases := []struct {
		name          string
		check         bool
		rank0, others op
	}{
		{"count/pipelined", false, allReduce(big), allReduce(big + 64)},
		{"kind/pipelined", false, allReduce(big), reduce},
		{"count/push", true, allReduce(push), allReduce(push + 16)},
		{"count/oneshot", true, allReduce(small), allReduce(small + 1)},
		{"root/oneshot", true, broadcast(0), broadcast(1)},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/check=%v", c.name, c.check), func(t *testing.T) {
			if c.check {
				t.Setenv("GCCL_GPU_CHECK_DESCRIPTORS", "1")
			}
			env.Reload()
			t.Cleanup(func() { env.Reload() })
			cm := world(t)
			b := harness.NewBuffers(t, cm.Device())
			s := b.Stream()
			send, recv := b.Alloc(8*(big+64), nil), b.Alloc(8*(big+64), nil)
			run := c.others
			if cm.Rank() == 0 {
				run = c.rank0
			}
			err := run(cm, send, recv, s)
			if err == nil {
				err = mpiboot.Wait(cm.Device(), s, 0)
			}
			if err == nil { // the kernel's verdict surfaces at the next launch
				err = coll.AllReduce(cm, send, send, 1, gccl.Float32, gccl.Sum, s)
			}
			if err == nil { // across hosts (ring kernels) a rank whose kernel only sent (a root, a chain's first rank) learns of it at its next receive: that operation's kernel fails
				if err = mpiboot.Wait(cm.Device(), s, 0); err == nil {
					err = cm.AsyncError()
				}
			}
			var failures []error
			if gccl.Code(err) != gccl.InvalidUsage || gccl.Code(cm.AsyncError()) != gccl.InvalidUsage {
				failures = append(failures, fmt.Errorf("rank %d: got %v (async %v), want invalid usage", cm.Rank(), err, cm.AsyncError()))
			}
			harness.Agree(t, failures)
		})
	}
}
