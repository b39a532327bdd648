package host

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/engine/host/runner"
	"github.com/gccl/gccl/internal/env"
)

// Channels, as NCCL's: where the ranks span hosts, a large collective is
// cut into parts (algo.ChannelPart) that run at once, each with its own
// plan, runner, scratch and connections to its peers (transport channel
// c), so that several messages are in flight per peer and several cores
// reduce, instead of one ring step at a time waiting for the last.
// algo.NumChannels says how many a collective uses, at most Config.Channels
// (GCCL_NET_NCHANNELS); a communicator on one host uses one (its ranks
// share memory). Point-to-point ops use channel 0.

// DefaultChannels is Config.Channels where neither it nor
// GCCL_NET_NCHANNELS is set: as the GPU backend's across hosts.
const DefaultChannels = 4

// settings are what every rank must agree on, as they shape the plans and
// the connections: checked at Open (agree), so that ranks that differ get
// a typed error instead of messages they cannot match.
type settings struct {
	chunk    int // bytes per pipeline piece, resolved
	channels int // Config.Channels, resolved
}

// settingsLen is the bytes of settings.marshal.
const settingsLen = 9

// resolveSettings fills cfg's defaults and checks them.
func resolveSettings(cfg Config) (settings, error) {
	s := settings{chunk: cfg.ChunkBytes, channels: cfg.Channels}
	if s.chunk == 0 {
		s.chunk = algo.DefaultChunkBytes
	}
	if s.chunk < 0 {
		return s, gccl.Errorf(gccl.InvalidArgument, "GCCL_CHUNKSIZE", "chunk of %d bytes: use a positive size, the same on every rank", s.chunk)
	}
	what := "Channels"
	if s.channels == 0 {
		s.channels, what = env.Get().NetNChannels, "GCCL_NET_NCHANNELS"
	}
	if s.channels == 0 {
		s.channels = DefaultChannels
	}
	if s.channels < 1 || s.channels > algo.MaxChannels {
		return s, gccl.Errorf(gccl.InvalidArgument, what, "%d channels: use 1 to %d (default %d), the same on every rank", s.channels, algo.MaxChannels, DefaultChannels)
	}
	return s, nil
}

func (s settings) marshal() []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, settingsLen), uint64(s.chunk))
	return append(b, byte(s.channels))
}

// agree checks that rank r's all-gathered entry p starts with the same
// settings as s (this rank's, me) and returns the rest of p.
func (s settings) agree(me, r int, p []byte) ([]byte, error) {
	if len(p) < settingsLen {
		return nil, gccl.Errorf(gccl.RemoteError, "peer", "rank %d published a %d-byte setup entry", r, len(p))
	}
	if chunk := binary.LittleEndian.Uint64(p); chunk != uint64(s.chunk) {
		return nil, gccl.Errorf(gccl.InvalidUsage, "GCCL_CHUNKSIZE", "rank %d cuts pipelines into %d-byte chunks, this rank (%d) into %d: set GCCL_CHUNKSIZE the same on every rank",
			r, chunk, me, s.chunk)
	}
	if ch := int(p[8]); ch != s.channels {
		return nil, gccl.Errorf(gccl.InvalidUsage, "GCCL_NET_NCHANNELS", "rank %d uses up to %d channels, this rank (%d) %d: set GCCL_NET_NCHANNELS the same on every rank",
			r, ch, me, s.channels)
	}
	return p[settingsLen:], nil
}

// channel is what one channel keeps from one collective to the next
// (used under the engine's issue order only).
type channel struct {
	sched   schedule
	runner  runner.Runner[*peerConn]
	scratch []byte
	err     error // runChannels' result of this channel
}

// runSchedules runs collective o on the step schedules of package algo:
// it picks the algorithm and how many channels, builds (or reuses) each
// channel's plan, connects the peers on every channel and runs them.
func (b *Backend) runSchedules(ctx context.Context, o *engine.Op, d opdesc.Desc, combine runner.Combine) error {
	n, err := b.schedules(o)
	if err != nil {
		return err
	}
	// Channel 0's part is the largest (algo.Split), so its peers are every
	// channel's.
	if err := b.connect(ctx, d.String, b.chans[0].sched.peers, n); err != nil {
		return err
	}
	return b.runChannels(ctx, n, o, d, combine)
}

// schedules picks collective o's algorithm and how many channels, builds
// (or reuses) each channel's plan and returns the channel count.
func (b *Backend) schedules(o *engine.Op) (int, error) {
	es := o.Type.Size()
	bytes := o.Count * es
	if o.Kind == algo.AllGather || o.Kind == algo.ReduceScatter {
		bytes *= b.nranks
	}
	p := algo.Params{Kind: o.Kind, Algo: b.choose(o.Kind, bytes), NRanks: b.nranks, Rank: b.rank, Root: o.Root,
		Count: o.Count, ElemSize: es, ChunkBytes: b.chunk, Channels: algo.NumChannels(bytes, b.nranks, b.nch)}
	for c := range p.Channels {
		p.Channel = c
		if _, err := b.chans[c].sched.get(p); err != nil {
			return 0, gccl.Errorf(gccl.InternalError, "plan", "%v", err)
		}
	}
	return p.Channels, nil
}

// runChannel runs channel c's plan of collective o (its schedule built).
func (b *Backend) runChannel(ctx context.Context, c int, o *engine.Op, d opdesc.Desc, combine runner.Combine) error {
	return b.load(ctx, c, o, d, combine).Run(b.chans[c].sched.plan.Steps)
}

// load readies channel c's runner for its plan of collective o (its
// schedule built) and returns it.
func (b *Backend) load(ctx context.Context, c int, o *engine.Op, d opdesc.Desc, combine runner.Combine) *runner.Runner[*peerConn] {
	ch := &b.chans[c]
	sc := &ch.sched
	if len(ch.scratch) < sc.plan.ScratchBytes {
		ch.scratch = make([]byte, sc.plan.ScratchBytes)
	}
	send, recv := o.Sizes(b.nranks)
	r := &ch.runner
	r.Reset(ctx, runner.Setup[*peerConn]{Me: b.rank, Desc: d, Conns: b.conns[c], Sends: sc.sends, ElemSize: o.Type.Size(), Combine: combine,
		Send: device.HostBytes(o.Send, send), Recv: device.HostBytes(o.Recv, recv), Scratch: ch.scratch})
	return r
}

// runChannels runs channels [0, n) of collective o at once, channel 0 on
// this goroutine. A channel that fails cancels the others. One channel
// runs as it is, allocating nothing.
func (b *Backend) runChannels(ctx context.Context, n int, o *engine.Op, d opdesc.Desc, combine runner.Combine) error {
	if n == 1 {
		return b.runChannel(ctx, 0, o, d, combine)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := atomic.Int32{}
	first.Store(-1)
	run := func(c int) {
		err := b.runChannel(ctx, c, o, d, combine)
		b.chans[c].err = err
		if err != nil && first.CompareAndSwap(-1, int32(c)) {
			cancel()
		}
	}
	var wg sync.WaitGroup
	for c := 1; c < n; c++ {
		wg.Go(func() { run(c) })
	}
	run(0)
	wg.Wait()
	f := first.Load()
	if f < 0 {
		return nil
	}
	return b.channelsErr(n, b.chans[f].err)
}

// channelsErr is the error of a collective whose first failing channel
// failed with err: err itself (the others were cancelled because of it),
// unless err is a wait that timed out, then every channel's timed-out
// waits merged (stall.go names the ranks they waited for).
func (b *Backend) channelsErr(n int, err error) error {
	if opdesc.Merge(err) == nil {
		return err
	}
	var live []error
	for c := range n {
		if err := b.chans[c].err; err != nil && !errors.Is(err, context.Canceled) {
			live = append(live, err)
		}
	}
	if w := opdesc.Merge(live...); w != nil {
		return w
	}
	return err
}
