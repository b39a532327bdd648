package badinput

import (
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/group"
	"github.com/stretchr/testify/require"
)

// groupCase is a case of class groups: rank 0 builds a group on the
// shared world whose first member is a valid in-place AllReduce on a
// poisoned 4 KiB buffer p; End must refuse it and launch nothing.
func groupCase(name, did, arg string, code gccl.Result, words []string, build func(t *testing.T, w *world, g *group.Group, p uintptr) error) badCase {
	return badCase{name: name, class: groups, did: did, code: code, arg: arg, words: words,
		then: "nothing in the group runs", shared: true,
		run: onShared(func(t *testing.T, w *world) error {
			p := w.alloc(t, 0, 4096)
			g := group.New()
			g.AllReduce(w.comms[0], p, p, 16, gccl.Int32, gccl.Sum, w.streams[0])
			err := build(t, w, g, p)
			require.NoError(t, w.sync(0))
			untouched(t, p, 4096, "the group's valid AllReduce")
			return err
		})}
}

func groupCases() []badCase {
	return []badCase{
		groupCase("group-nil-comm", "a group with an AllGather on a nil communicator", "comm", gccl.InvalidArgument, []string{"nil communicator"},
			func(t *testing.T, w *world, g *group.Group, p uintptr) error {
				g.AllGather(nil, p, p, 4, gccl.Int32, w.streams[0])
				return g.End()
			}),
		groupCase("group-bad-root", "a group whose second operation is a Reduce with root -1", "root", gccl.InvalidArgument,
			[]string{"root -1 is not a rank"},
			func(t *testing.T, w *world, g *group.Group, p uintptr) error {
				g.Reduce(w.comms[0], p, p, 4, gccl.Int32, gccl.Sum, -1, w.streams[0])
				return g.End()
			}),
		groupCase("group-bad-peer", "a group with a Send to peer 2 on a 2-rank communicator", "peer", gccl.InvalidArgument,
			[]string{"peer 2 is not a rank"},
			func(t *testing.T, w *world, g *group.Group, p uintptr) error {
				g.Send(w.comms[0], p, 4, gccl.Int32, 2, w.streams[0])
				return g.End()
			}),
		groupCase("group-bad-stream", "a group with a Recv on stream 0x1234, which no NewStream made", "stream", gccl.InvalidArgument,
			[]string{"unknown host stream handle 0x1234"},
			func(t *testing.T, w *world, g *group.Group, p uintptr) error {
				g.Recv(w.comms[0], p, 4, gccl.Int32, 1, 0x1234)
				return g.End()
			}),
		groupCase("group-bad-pattern", "a group with an AllToAllv whose sdispls has 3 entries on 2 ranks", "sdispls", gccl.InvalidArgument,
			[]string{"has 3 entries; want one per rank (2)"},
			func(t *testing.T, w *world, g *group.Group, p uintptr) error {
				g.AllToAllv(w.comms[0], p, []int{1, 1}, []int{0, 1, 2}, p+64, []int{1, 1}, []int{0, 1}, gccl.Int32, w.streams[0])
				return g.End()
			}),
		groupCase("group-closed-comm", "a group with an AllReduce on a closed communicator", "comm", gccl.InvalidUsage, []string{"is closed; create a new one"},
			func(t *testing.T, w *world, g *group.Group, p uintptr) error {
				c := soloComm(t, nil)
				require.NoError(t, c.Close())
				g.AllReduce(c, p, p, 4, gccl.Int32, gccl.Sum, w.streams[0])
				return g.End()
			}),
		groupCase("group-mixed-blocking", "a group over a blocking and a nonblocking communicator", "comm", gccl.InvalidArgument,
			[]string{"mixes blocking and nonblocking communicators"},
			func(t *testing.T, w *world, g *group.Group, p uintptr) error {
				nonblocking := false
				c := soloComm(t, &comm.Config{Blocking: &nonblocking})
				q := w.alloc(t, 0, 64)
				g.AllReduce(c, q, q, 4, gccl.Int32, gccl.Sum, 0)
				return g.End()
			}),
		groupCase("group-end-twice", "End called twice on one group", "group", gccl.InvalidUsage, []string{"End called twice"},
			func(t *testing.T, w *world, g *group.Group, p uintptr) error {
				g2 := group.New()
				require.NoError(t, g2.End(), "an empty group")
				return g2.End()
			}),
	}
}

// soloComm is a 1-rank host communicator (cfg's Blocking, else blocking),
// ready, aborted when the test ends.
func soloComm(t *testing.T, cfg *comm.Config) *comm.Comm {
	t.Helper()
	c := comm.Config{Timeout: 10 * time.Second}
	if cfg != nil {
		c = *cfg
		c.Timeout = 10 * time.Second
	}
	return newWorldConfig(t, 1, &c).comms[0]
}
