package badinput

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/p2p"
	"github.com/gccl/gccl/test/fault"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// disagreeTimeout is the deadline of the disagreement cases' worlds: some
// rows end in a timeout.
const disagreeTimeout = time.Second

// disagreeCases are test/fault's Disagreements (which TestDisagreements
// runs on every host path), here on the default path of two ranks of one
// host, the answer of each: the reporting ranks' error (the first one's
// is matched), the other rank's, then a matched Send/Recv and AllReduce
// that must fail or give the right data, never stale bytes.
func disagreeCases() []badCase {
	var out []badCase
	for _, d := range fault.Disagreements {
		exp, ok := disagreeAnswers[d.Name]
		if !ok {
			panic("badinput: no expected answer for disagreement " + d.Name)
		}
		out = append(out, badCase{name: "disagree-" + d.Name, class: disagree, did: d.Did,
			code: exp.code, words: exp.words, then: exp.then,
			run: func(t *testing.T) error { return runDisagreement(t, d, exp) }})
	}
	return out
}

// disagreeAnswer is what the default path answers to a disagreement: code
// and words on the ranks in on, and on each other rank an error whose code
// is one of others (gccl.Success: no error).
type disagreeAnswer struct {
	code   gccl.Result
	words  []string
	on     []int
	others []gccl.Result
	then   string
}

var (
	named       = []string{"received", "from rank", "while running"}
	bothNamed   = disagreeAnswer{gccl.InvalidUsage, named, []int{0, 1}, nil, "on both ranks; the communicator fails, later operations fail (never stale data)"}
	receiverErr = disagreeAnswer{gccl.InvalidUsage, named, []int{1}, []gccl.Result{gccl.Success, gccl.InvalidUsage, gccl.RemoteError},
		"on the receiver (rank 1); the sender's Send may have completed; later operations fail (never stale data)"}
)

var disagreeAnswers = map[string]disagreeAnswer{
	"count": bothNamed, "type": bothNamed, "operator": bothNamed, "kind": bothNamed, "order": bothNamed, "skipped": bothNamed,
	"root-other": {gccl.InvalidUsage, []string{"received Broadcast(1024 int32, root", "while running Broadcast(1024 int32, root"}, []int{0, 1}, nil, "on both ranks (zero-copy path); on step schedules `ErrTimeout`"},
	"root-self":  {gccl.InvalidUsage, []string{"received Broadcast(1024 int32, root", "while running Broadcast(1024 int32, root"}, []int{0, 1}, nil, "on both ranks at once (zero-copy path); on step schedules the next operation fails"},
	"send-more":  receiverErr, "send-less": receiverErr, "send-type": receiverErr,
	"send-vs-recv": {gccl.TimeoutError, []string{"Recv(256 int32) from rank 1 timed out after", "waiting for rank 1"}, []int{0}, []gccl.Result{gccl.TimeoutError},
		"after the 1 s deadline (the other rank: the same, naming rank 0; each waits for the other, so each names the rank it waited for)"},
}

func runDisagreement(t *testing.T, d fault.Disagreement, exp disagreeAnswer) error {
	w := newWorld(t, 2, disagreeTimeout)
	bufs := make([]*fault.Bufs, 2)
	for r, c := range w.comms {
		b, err := fault.NewBufs(c, fault.DisagreeBytes, uint64(r))
		require.NoError(t, err)
		w.atEnd(b.Free)
		bufs[r] = b
	}
	errs := w.par(func(r int) error {
		err := d.Calls(r, w.comms[r], bufs[r])
		if err == nil {
			err = bufs[r].Dev.Synchronize(bufs[r].S)
		}
		if err == nil && d.NextOp {
			err = matched(t, w, bufs, r)
		}
		return err
	})
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		if slices.Contains(exp.on, r) {
			expect(t, exp.code, "", exp.words, err)
		} else {
			assert.Contains(t, exp.others, gccl.Code(err), "rank %d: %v", r, err)
		}
	}
	// Later matched operations fail or are right; never stale bytes.
	w.par(func(r int) error { _ = matched(t, w, bufs, r); return nil })
	return errs[exp.on[0]]
}

// matched runs a Send/Recv from rank 0 to 1 and an AllReduce of 256
// int32, each rank r contributing 42+r, and checks the data when they
// succeed.
func matched(t *testing.T, w *world, bufs []*fault.Bufs, r int) error {
	const count = 256
	b := bufs[r]
	fill(b.Send, count, func(int) int32 { return int32(42 + r) })
	var err error
	if r == 0 {
		err = p2p.Send(w.comms[0], b.Send, count, gccl.Int32, 1, b.S)
	} else {
		err = p2p.Recv(w.comms[1], b.Recv, count, gccl.Int32, 0, b.S)
	}
	if err = errors.Join(err, syncIf(err, b)); err != nil {
		return err
	}
	if r == 1 {
		want(t, b.Recv, count, func(int) int32 { return 42 }, "Send/Recv after the disagreement")
	}
	err = coll.AllReduce(w.comms[r], b.Send, b.Recv, count, gccl.Int32, gccl.Sum, b.S)
	if err = errors.Join(err, syncIf(err, b)); err != nil {
		return err
	}
	want(t, b.Recv, count, func(int) int32 { return 42 + 43 }, "AllReduce after the disagreement")
	return nil
}

func syncIf(err error, b *fault.Bufs) error {
	if err != nil {
		return nil
	}
	return b.Dev.Synchronize(b.S)
}
