package fault

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSeveralGoroutinesOneComm drives each rank's communicator from two
// goroutines at once, one running AllReduces of 1024 int32, the other
// AllGathers of 512 int32, each on its own stream, so the ranks may issue
// them in different orders. gccl does not order calls made concurrently
// (README: one goroutine per communicator at a time), but such misuse must
// never return success with wrong data: each operation either delivers
// exactly the right result or fails with a typed error (the ranks'
// descriptors disagree: ErrInvalidUsage, or a peer's failure or timeout
// relayed), and the test counts both outcomes.
func TestSeveralGoroutinesOneComm(t *testing.T) {
	for _, m := range disagreeModes {
		t.Run(m.name, func(t *testing.T) {
			t.Setenv("GCCL_ALGO", m.algo)
			t.Setenv("GCCL_SHM_DISABLE", m.shmDisable)
			env.Reload()
			t.Cleanup(func() { env.Reload() })
			severalGoroutines(t)
		})
	}
}

func severalGoroutines(t *testing.T) {
	const (
		trials  = 12
		perG    = 4    // operations per goroutine
		arCount = 1024 // int32 elements of each AllReduce
		agCount = 512  // int32 elements each rank adds to an AllGather
	)
	var right, refused int
	for trial := range trials {
		comms := makeComms(t, 2, 2*time.Second)
		ar, ag := make([]*Bufs, 2), make([]*Bufs, 2)
		for r, c := range comms {
			var err error
			ar[r], err = NewBufs(c, 4*arCount, uint64(trial))
			require.NoError(t, err)
			ag[r], err = NewBufs(c, 4*2*agCount, uint64(trial)+1000)
			require.NoError(t, err)
			t.Cleanup(ar[r].Free)
			t.Cleanup(ag[r].Free)
		}
		wantAR := reduce.Reference([][]byte{read(t, ar[0], ar[0].Send, 4*arCount), read(t, ar[1], ar[1].Send, 4*arCount)}, gccl.Int32, gccl.Sum, 0)
		wantAG := append(read(t, ag[0], ag[0].Send, 4*agCount), read(t, ag[1], ag[1].Send, 4*agCount)...)
		type outcome struct {
			err error
			got []byte
		}
		outs := make([][]outcome, 4) // rank*2 + goroutine
		var wg sync.WaitGroup
		for r, c := range comms {
			run := func(g int, b *Bufs, op func(c *comm.Comm, b *Bufs) error, n int) {
				for range perG {
					err := op(c, b)
					if err == nil {
						err = b.Dev.Synchronize(b.S)
					}
					var got []byte
					if err == nil {
						got = read(t, b, b.Recv, n)
					}
					outs[2*r+g] = append(outs[2*r+g], outcome{err, got})
					if err != nil {
						return // the communicator failed: later calls fail at once
					}
				}
			}
			wg.Go(func() {
				run(0, ar[r], func(c *comm.Comm, b *Bufs) error {
					return coll.AllReduce(c, b.Send, b.Recv, arCount, gccl.Int32, gccl.Sum, b.S)
				}, 4*arCount)
			})
			wg.Go(func() {
				run(1, ag[r], func(c *comm.Comm, b *Bufs) error {
					return coll.AllGather(c, b.Send, b.Recv, agCount, gccl.Int32, b.S)
				}, 4*2*agCount)
			})
		}
		wg.Wait()
		for i, os := range outs {
			want := wantAR
			if i%2 == 1 {
				want = wantAG
			}
			for k, o := range os {
				if o.err != nil {
					c := gccl.Code(o.err)
					assert.True(t, c == gccl.InvalidUsage || c == gccl.RemoteError || c == gccl.TimeoutError,
						"trial %d rank %d goroutine %d op %d: untyped or unexpected failure %v", trial, i/2, i%2, k, o.err)
					refused++
					continue
				}
				if !assert.True(t, bytes.Equal(o.got, want), "trial %d rank %d goroutine %d op %d: success with wrong data", trial, i/2, i%2, k) {
					return
				}
				right++
			}
		}
	}
	t.Logf("%d operations right, %d refused with a typed error, 0 wrong", right, refused)
	assert.Positive(t, right+refused)
}

// read copies n bytes at p on b's device.
func read(t *testing.T, b *Bufs, p uintptr, n int) []byte {
	out := make([]byte, n)
	require.NoError(t, b.Dev.CopyOut(out, p))
	return out
}
