package group

import (
	"github.com/gccl/gccl/comm"
)

// lifecycle is what a group does to communicators themselves: NCCL's
// ncclCommInitRank, ncclCommSplit and ncclCommFinalize inside a group, with
// which one goroutine creates, splits or finalizes the ranks of every
// device it drives (one after the other, each would wait for the next).
type lifecycle struct {
	inits     []comm.InitReq
	initOuts  []**comm.Comm
	splits    []comm.SplitReq
	splitOuts []**comm.Comm
	finals    []*comm.Comm
}

// InitRank adds comm.InitRankConfig(nranks, id, rank, cfg); End creates the
// group's ranks at once and stores this one in *out (left unchanged if End
// fails). cfg nil means defaults; cfg.Device picks the device.
func (g *Group) InitRank(out **comm.Comm, nranks int, id comm.UniqueID, rank int, cfg *comm.Config) {
	if g.usable() {
		g.life.inits = append(g.life.inits, comm.InitReq{NRanks: nranks, ID: id, Rank: rank, Config: cfg})
		g.life.initOuts = append(g.life.initOuts, out)
	}
}

// Split adds parent.Split(color, key, cfg); End splits at once and stores
// the new communicator in *out (nil for comm.SplitNoColor).
func (g *Group) Split(out **comm.Comm, parent *comm.Comm, color, key int, cfg *comm.Config) {
	if g.usable() {
		g.life.splits = append(g.life.splits, comm.SplitReq{Parent: parent, Color: color, Key: key, Config: cfg})
		g.life.splitOuts = append(g.life.splitOuts, out)
	}
}

// Finalize adds c.Finalize; End finalizes the group's communicators at
// once, after its operations were launched. This is how ranks that one
// call made in this process (comm.InitAll, a group's InitRank) are
// finalized: see comm.Comm.Finalize.
func (g *Group) Finalize(c *comm.Comm) {
	if g.usable() {
		g.life.finals = append(g.life.finals, c)
	}
}

// create runs the group's InitRanks, then its Splits.
func (l *lifecycle) create() error {
	if len(l.inits) > 0 {
		comms, err := comm.InitRanks(l.inits)
		if err != nil {
			return err
		}
		store(l.initOuts, comms)
	}
	if len(l.splits) > 0 {
		comms, err := comm.SplitAll(l.splits)
		if err != nil {
			return err
		}
		store(l.splitOuts, comms)
	}
	return nil
}

// finalize runs the group's Finalizes.
func (l *lifecycle) finalize() error {
	if len(l.finals) == 0 {
		return nil
	}
	return comm.FinalizeAll(l.finals)
}

func store(outs []**comm.Comm, comms []*comm.Comm) {
	for i, out := range outs {
		if out != nil {
			*out = comms[i]
		}
	}
}
