package fault

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// disagreeModes are the host paths a disagreement can meet: SHM with
// zero-copy (the default on one host), SHM rings with step schedules,
// and TCP sockets.
var disagreeModes = []struct{ name, algo, shmDisable string }{
	{"shm-zerocopy", "", "0"},
	{"shm-steps", "^zerocopy", "0"},
	{"net", "", "1"},
}

// TestDisagreements: every row of Disagreements, on every path. The
// reporting ranks fail with ErrInvalidUsage naming both ranks; the other
// may have succeeded; then a correctly matched Send/Recv and AllReduce
// either fail (the communicator failed) or return the right data, never
// stale bytes.
func TestDisagreements(t *testing.T) {
	for _, m := range disagreeModes {
		for _, d := range Disagreements {
			t.Run(m.name+"/"+d.Name, func(t *testing.T) {
				t.Setenv("GCCL_ALGO", m.algo)
				t.Setenv("GCCL_SHM_DISABLE", m.shmDisable)
				env.Reload()
				t.Cleanup(func() { env.Reload() })
				disagree(t, d)
			})
		}
	}
}

func disagree(t *testing.T, d Disagreement) {
	const n = 2
	comms := makeComms(t, n, 2*time.Second)
	bufs := makeBufs(t, comms, DisagreeBytes)
	_, errs := gccltest.Parallel(n, func(r int) (struct{}, error) {
		err := d.Calls(r, comms[r], bufs[r])
		if err == nil {
			err = bufs[r].Dev.Synchronize(bufs[r].S)
		}
		return struct{}{}, err
	})
	next := noStaleBytes(t, comms, bufs)
	for r, err := range errs {
		t.Logf("rank %d: %v; matched ops after: %v", r, err, next[r])
		if err == nil && d.NextOp {
			err = next[r]
		}
		switch {
		case len(d.Reporters) == 0:
			c := gccl.Code(err)
			// ErrRemote: the peer timed out first and told this rank.
			assert.True(t, c == gccl.TimeoutError || c == gccl.InvalidUsage || c == gccl.RemoteError, "rank %d: %v", r, err)
		case slices.Contains(d.Reporters, r):
			require.ErrorIs(t, err, gccl.ErrInvalidUsage, "rank %d must report the disagreement", r)
			assert.Regexp(t, `rank [01] received .* from rank [01] while running`, err.Error(), "rank %d", r)
			assert.Contains(t, err.Error(), "rank 1", "rank %d", r)
			assert.ErrorIs(t, comms[r].AsyncError(), gccl.ErrInvalidUsage, "rank %d: the communicator must be failed", r)
		case err != nil:
			c := gccl.Code(err)
			assert.True(t, c == gccl.InvalidUsage || c == gccl.RemoteError, "rank %d: %v", r, err)
		}
	}
}

// noStaleBytes runs a matched Send/Recv (rank 0 sends 42s) and a matched
// AllReduce: each either fails or delivers exactly the right values. It
// returns each rank's first error.
func noStaleBytes(t *testing.T, comms []*comm.Comm, bufs []*Bufs) []error {
	const count = 256
	_, errs := gccltest.Parallel(len(comms), func(r int) (struct{}, error) {
		b := bufs[r]
		in := make([]byte, 4*count)
		for i := range count {
			binary.LittleEndian.PutUint32(in[4*i:], uint32(42+r))
		}
		if err := b.Dev.CopyIn(b.Send, in); err != nil {
			return struct{}{}, err
		}
		var err error
		if r == 0 {
			err = p2p.Send(comms[r], b.Send, count, gccl.Int32, 1, b.S)
		} else {
			err = p2p.Recv(comms[r], b.Recv, count, gccl.Int32, 0, b.S)
		}
		if err == nil {
			err = b.Dev.Synchronize(b.S)
		}
		if err != nil {
			return struct{}{}, err
		}
		if r == 1 {
			checkAll(t, b, count, 42, "Send/Recv after the disagreement")
		}
		if err := coll.AllReduce(comms[r], b.Send, b.Recv, count, gccl.Int32, gccl.Sum, b.S); err != nil {
			return struct{}{}, err
		}
		if err := b.Dev.Synchronize(b.S); err != nil {
			return struct{}{}, err
		}
		checkAll(t, b, count, 42+43, "AllReduce after the disagreement")
		return struct{}{}, nil
	})
	return errs
}

func checkAll(t *testing.T, b *Bufs, count int, want uint32, what string) {
	out := make([]byte, 4*count)
	require.NoError(t, b.Dev.CopyOut(out, b.Recv))
	for i := range count {
		if got := binary.LittleEndian.Uint32(out[4*i:]); got != want {
			t.Errorf("%s: element %d is %d, want %d (stale or wrong data)", what, i, got, want)
			return
		}
	}
}
