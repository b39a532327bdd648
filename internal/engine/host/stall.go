package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
)

// Naming the rank that stalled. A rank whose wait times out knows only
// whom it waited for, which may be a healthy rank itself waiting (a ring
// or tree relays a stall). So every rank whose operation times out
// publishes a report over the bootstrap to every peer ("rank R waits for
// [P...]"), then collects the peers' reports for stallGrace and follows
// its waits through the ranks that reported: the ranks reached that sent
// no report, alive or not, made no progress, and are the ones named. A
// peer that relays its own timeout in a failure record (failConns) is
// followed the same way. Where the waits form a cycle of ranks that all
// reported (two ranks each receiving from the other), the ranks waited
// for are named.

// stallTag is the bootstrap tag of the reports (the comm package's own
// tags are negative).
const stallTag = 0x57414954 // "WAIT"

// stallGrace is how long a timed-out rank collects its peers' reports:
// a tenth of the timeout, between 50 ms and 1 s.
func stallGrace(timeout time.Duration) time.Duration {
	return min(max(timeout/10, 50*time.Millisecond), time.Second)
}

// stallReport is what a timed-out rank publishes.
type stallReport struct {
	Op    string         `json:"op"`
	Waits []int          `json:"waits"`
	Notes map[int]string `json:"notes"`
}

// Heard records that a message of d came from the peer of c. It runs for
// every message received, so it keeps the descriptor and leaves making a
// label of it to Note, which runs only when a wait times out.
func (c *peerConn) Heard(d opdesc.Desc) {
	c.heardMu.Lock()
	c.heardLast, c.heardAny = d, true
	c.heardMu.Unlock()
}

// Note says what this rank last heard of the peer of c, for an operation
// labelled cur.
func (c *peerConn) Note(cur string) string {
	last, seen := "", false
	if c != nil {
		c.heardMu.Lock()
		if seen = c.heardAny; seen {
			last = c.heardLast.Label()
		}
		c.heardMu.Unlock()
	}
	switch {
	case !seen:
		return "no data from it yet"
	case last == cur:
		return "it stopped sending partway through " + cur
	}
	return "no data from it since " + last
}

// lastHeard is embedded in peerConn: the descriptor of the last message
// its connection delivered.
type lastHeard struct {
	heardMu   sync.Mutex
	heardLast opdesc.Desc
	heardAny  bool
}

// namesStalled turns a timed-out run's error into the ErrTimeout that names
// the rank(s) that made no progress; other errors pass unchanged.
func (b *Backend) namesStalled(err error, took time.Duration) error {
	w := opdesc.Merge(err)
	if w == nil || b.boot == nil {
		return err
	}
	reports := b.exchangeReports(stallReport{Op: w.Op, Waits: w.Peers, Notes: w.Notes})
	stalled, via := resolve(b.rank, w.Peers, reports)
	notes := make([]string, 0, len(stalled))
	for _, p := range stalled {
		if note := reports[via[p]].Notes[p]; note != "" && len(stalled) == 1 {
			notes = append(notes, note)
		} else if note != "" {
			notes = append(notes, fmt.Sprintf("rank %d: %s", p, note))
		}
	}
	msg := fmt.Sprintf("%s timed out after %v waiting for %s", w.Op, took.Round(time.Millisecond), opdesc.Ranks(stalled))
	if len(notes) > 0 {
		msg += " (" + strings.Join(notes, "; ") + ")"
	}
	var relays []int // ranks waited for that reported waiting in turn
	for _, p := range w.Peers {
		if !slices.Contains(stalled, p) {
			relays = append(relays, p)
		}
	}
	if len(relays) > 0 {
		msg += fmt.Sprintf("; this rank waited for %s too, which reported waiting in turn", opdesc.Ranks(relays))
	}
	verbs := "is running and calls"
	if len(stalled) > 1 {
		verbs = "are running and call"
	}
	msg += fmt.Sprintf("; check that %s %s the same operations (a stopped or stuck process, or a missing call), or raise GCCL_TIMEOUT or Config.Timeout if it is only slow", opdesc.Ranks(stalled), verbs)
	return gccl.Errorf(gccl.TimeoutError, "peer", "%s", msg)
}

// exchangeReports sends this rank's report to every peer and returns the
// reports received within stallGrace, by rank (this rank's included).
func (b *Backend) exchangeReports(mine stallReport) map[int]stallReport {
	ctx, cancel := context.WithTimeout(context.Background(), stallGrace(b.timeout))
	defer cancel()
	data, _ := json.Marshal(mine)
	got := map[int]stallReport{b.rank: mine}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range b.nranks {
		if p == b.rank {
			continue
		}
		wg.Go(func() { _ = b.boot.Send(ctx, p, stallTag, data) })
		wg.Go(func() {
			msg, err := b.boot.Recv(ctx, p, stallTag)
			var r stallReport
			if err == nil && json.Unmarshal(msg, &r) == nil {
				mu.Lock()
				got[p] = r
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return got
}

// resolve follows the waits of rank me (start) through the ranks that
// reported: it returns the ranks reached that did not report (ascending),
// each with the rank that waited for it; start itself when every rank
// reached reported (a cycle).
func resolve(me int, start []int, reports map[int]stallReport) (stalled []int, via map[int]int) {
	via = map[int]int{}
	seen := map[int]bool{}
	var visit func(p, from int)
	visit = func(p, from int) {
		if seen[p] {
			return
		}
		seen[p] = true
		r, ok := reports[p]
		if !ok {
			stalled = append(stalled, p)
			via[p] = from
			return
		}
		for _, q := range r.Waits {
			visit(q, p)
		}
	}
	for _, p := range start {
		visit(p, me)
	}
	if len(stalled) == 0 {
		stalled = slices.Clone(start)
		for _, p := range start {
			via[p] = me
		}
	}
	slices.Sort(stalled)
	return stalled, via
}
