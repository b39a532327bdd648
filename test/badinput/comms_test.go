package badinput

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// soloCase is a case of class comms on a fresh 1-rank communicator c
// with a 4 KiB buffer p; call puts c in the state the case is about and
// makes the call.
func soloCase(name, did, arg string, code gccl.Result, words []string, then string, call func(t *testing.T, c *comm.Comm, p uintptr) error) badCase {
	return badCase{name: name, class: comms, did: did, code: code, arg: arg, words: words, then: then,
		run: func(t *testing.T) error {
			c := soloComm(t, nil)
			d, err := device.Open(device.Host, 0)
			require.NoError(t, err)
			p, err := d.Alloc(4096)
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Free(p) })
			return call(t, c, p)
		}}
}

func commCases() []badCase {
	var nilComm *comm.Comm
	iu, ia := gccl.InvalidUsage, gccl.InvalidArgument
	return []badCase{
		{name: "nil-comm-allreduce", class: comms, did: "AllReduce on a nil *comm.Comm", code: ia, arg: "comm",
			words: []string{"nil communicator"}, run: func(t *testing.T) error {
				return coll.AllReduce(nilComm, 0x1000, 0x1000, 4, gccl.Int32, gccl.Sum, 0)
			}},
		{name: "nil-comm-send", class: comms, did: "Send on a nil *comm.Comm", code: ia, arg: "comm",
			words: []string{"nil communicator"}, run: func(t *testing.T) error {
				return p2p.Send(nil, 0x1000, 4, gccl.Int32, 0, 0)
			}},
		{name: "nil-comm-finalize", class: comms, did: "Finalize, Split and Status on a nil *comm.Comm", code: ia, arg: "comm",
			words: []string{"nil communicator"}, then: "Split and Status answer the same; Rank is -1, Count 0",
			run: func(t *testing.T) error {
				_, err := nilComm.Split(0, 0, nil)
				expect(t, ia, "comm", []string{"nil communicator"}, err)
				expect(t, ia, "comm", []string{"nil communicator"}, nilComm.Status())
				assert.Equal(t, -1, nilComm.Rank())
				assert.Equal(t, 0, nilComm.Count())
				return nilComm.Finalize()
			}},
		{name: "nil-comm-close", class: comms, did: "Close and Abort on a nil *comm.Comm", code: gccl.Success,
			then: "both return nil", run: func(t *testing.T) error {
				require.NoError(t, nilComm.Abort())
				return nilComm.Close()
			}},
		soloCase("closed-comm-allreduce", "AllReduce on a closed communicator", "comm", iu, []string{"is closed; create a new one"}, "",
			func(t *testing.T, c *comm.Comm, p uintptr) error {
				require.NoError(t, c.Close())
				return coll.AllReduce(c, p, p, 4, gccl.Int32, gccl.Sum, 0)
			}),
		soloCase("finalized-comm-allreduce", "AllReduce after Finalize", "comm", iu, []string{"was finalized; only Close is allowed"}, "",
			func(t *testing.T, c *comm.Comm, p uintptr) error {
				require.NoError(t, c.Finalize())
				return coll.AllReduce(c, p, p, 4, gccl.Int32, gccl.Sum, 0)
			}),
		soloCase("aborted-comm-send", "Send after Abort", "comm", iu, []string{"is closed; create a new one"}, "",
			func(t *testing.T, c *comm.Comm, p uintptr) error {
				require.NoError(t, c.Abort())
				return p2p.Send(c, p, 4, gccl.Int32, 0, 0)
			}),
		soloCase("finalize-twice", "Finalize called twice", "comm", iu, []string{"was finalized; only Close is allowed"}, "",
			func(t *testing.T, c *comm.Comm, p uintptr) error {
				require.NoError(t, c.Finalize())
				return c.Finalize()
			}),
		soloCase("close-twice", "Close twice, then Abort", "", gccl.Success, nil, "all return nil; Status then says the communicator is closed",
			func(t *testing.T, c *comm.Comm, p uintptr) error {
				require.NoError(t, c.Close())
				require.NoError(t, c.Close())
				expect(t, iu, "comm", []string{"is closed"}, c.Status())
				return c.Abort()
			}),
		soloCase("split-closed", "Split of a closed communicator", "comm", iu, []string{"is closed"}, "",
			func(t *testing.T, c *comm.Comm, p uintptr) error {
				require.NoError(t, c.Close())
				_, err := c.Split(0, 0, nil)
				return err
			}),
		soloCase("premulsum-closed", "CreatePreMulSum on a closed communicator", "comm", iu, []string{"is closed; create a new one"}, "",
			func(t *testing.T, c *comm.Comm, p uintptr) error {
				require.NoError(t, c.Close())
				_, err := coll.CreatePreMulSum(c, p, gccl.Float32, coll.ScalarHostImmediate)
				return err
			}),
		soloCase("register-closed", "bufreg.Register with a closed communicator", "comm", iu, []string{"is closed; create a new one"}, "",
			func(t *testing.T, c *comm.Comm, p uintptr) error {
				require.NoError(t, c.Close())
				_, err := bufreg.Register(c, p, 4096)
				return err
			}),
	}
}
