package comm

import (
	"slices"
	"sync"

	"github.com/gccl/gccl"
)

// siblings are the ranks of one communicator that one call made in this
// process (InitAll, InitRanks, SplitAll). One goroutine usually drives
// them all, and a Finalize waits for every rank, so they are finalized
// together: FinalizeAll, or group.Finalize for each in one group.
type siblings struct {
	comms []*Comm
}

// InitReq is one rank for InitRanks: InitRankConfig's arguments.
type InitReq struct {
	NRanks int
	ID     UniqueID
	Rank   int
	Config *Config // nil = defaults
}

// InitRanks creates several ranks at once, each on its own goroutine, and
// returns them in the order of reqs: NCCL's ncclCommInitRank calls inside
// one group, with which one goroutine creates the ranks of every device it
// drives (group.InitRank is the usual way). If any fails, all are aborted
// and the first error is returned.
func InitRanks(reqs []InitReq) ([]*Comm, error) {
	comms, err := concurrently(len(reqs), func(i int) (*Comm, error) {
		r := reqs[i]
		return InitRankConfig(r.NRanks, r.ID, r.Rank, r.Config)
	})
	if err != nil {
		return nil, err
	}
	markSiblings(comms, func(i int) any { return reqs[i].ID })
	return comms, nil
}

// SplitReq is one Split for SplitAll: Parent.Split's arguments.
type SplitReq struct {
	Parent     *Comm
	Color, Key int
	Config     *Config // nil = inherit the parent's
}

// SplitAll runs several Splits at once, each on its own goroutine, and
// returns the new communicators in the order of reqs (nil for
// SplitNoColor): the Splits of every rank one goroutine drives, which one
// after the other would each wait for the next (group.Split is the usual
// way). If any fails, all are aborted and the first error is returned.
func SplitAll(reqs []SplitReq) ([]*Comm, error) {
	comms, err := concurrently(len(reqs), func(i int) (*Comm, error) {
		r := reqs[i]
		if r.Parent == nil {
			return nil, gccl.Errorf(gccl.InvalidArgument, "comm", "split %d has a nil parent communicator", i)
		}
		return r.Parent.Split(r.Color, r.Key, r.Config)
	})
	if err != nil {
		return nil, err
	}
	type key struct {
		parent any
		color  int
	}
	markSiblings(comms, func(i int) any {
		p := reqs[i].Parent
		if p.sibs != nil {
			return key{p.sibs, reqs[i].Color}
		}
		return key{p, reqs[i].Color}
	})
	return comms, nil
}

// FinalizeAll finalizes several communicators at once, each on its own
// goroutine (group.Finalize is the usual way): what one goroutine must do
// for ranks it drives, since each Finalize waits for every rank. Every
// sibling (see Finalize) of a communicator in comms must be in comms too.
func FinalizeAll(comms []*Comm) error {
	for _, c := range comms {
		if err := c.open(); err != nil {
			return err
		}
		if err := c.sibs.unfinalized(c, comms); err != nil {
			return err
		}
	}
	_, err := concurrently(len(comms), func(i int) (*Comm, error) { return nil, comms[i].finalize() })
	return err
}

// concurrently runs f(0..n-1) on n goroutines; if any fails, it aborts
// every communicator made and returns the first error.
func concurrently(n int, f func(i int) (*Comm, error)) ([]*Comm, error) {
	comms := make([]*Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { comms[i], errs[i] = f(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, c := range comms {
				_ = c.Abort()
			}
			return nil, err
		}
	}
	return comms, nil
}

// markSiblings makes the communicators of comms with the same key (one
// communicator) siblings of each other; nil entries are skipped.
func markSiblings(comms []*Comm, keyOf func(i int) any) {
	sets := map[any]*siblings{}
	for i, c := range comms {
		if c == nil {
			continue
		}
		k := keyOf(i)
		if sets[k] == nil {
			sets[k] = &siblings{}
		}
		sets[k].comms = append(sets[k].comms, c)
	}
	for _, s := range sets {
		if len(s.comms) < 2 {
			continue
		}
		for _, c := range s.comms {
			c.sibs = s
		}
	}
}

// unfinalized fails at once when a sibling of c that batch does not hold
// is still open: a Finalize of c would wait for it until the deadline.
func (s *siblings) unfinalized(c *Comm, batch []*Comm) error {
	if s == nil {
		return nil
	}
	var missing []int
	for _, o := range s.comms {
		if o != c && o.state.Load() == stateOpen && !slices.Contains(batch, o) {
			missing = append(missing, o.rank)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return gccl.Errorf(gccl.InvalidUsage, "comm", "Finalize of rank %d alone: ranks %v of this communicator were made in this process by the same call "+
		"(InitAll, a group's InitRank or Split) and are not finalized; a Finalize waits for every rank, so finalize them together "+
		"in one group (group.Finalize for each, then End) or with comm.FinalizeAll", c.rank, missing)
}
