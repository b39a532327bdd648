package runner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipe is one direction between two ranks: a Send waits until the
// receiver takes the message (nothing is buffered), and a Recv hands the
// message on in pieces of pieceLen bytes, which split elements.
type pipe struct {
	msgs     chan message
	pieceLen int
	failed   error // what the receiving end was failed with
}

type message struct {
	d transport.Desc
	p []byte
}

func newPipe(pieceLen int) *pipe { return &pipe{msgs: make(chan message), pieceLen: pieceLen} }

func (c *pipe) Send(ctx context.Context, d transport.Desc, p []byte) error {
	select {
	case c.msgs <- message{d, append([]byte(nil), p...)}:
		return nil
	case <-ctx.Done():
		return gccl.Errorf(gccl.TimeoutError, "send", "%v", ctx.Err())
	}
}

func (c *pipe) Recv(ctx context.Context, accept func(transport.Desc, int) error, consume func([]byte) error) error {
	var m message
	select {
	case m = <-c.msgs:
	case <-ctx.Done():
		return gccl.Errorf(gccl.TimeoutError, "recv", "%v", ctx.Err())
	}
	if err := accept(m.d, len(m.p)); err != nil {
		return err
	}
	for p := m.p; len(p) > 0; {
		k := min(c.pieceLen, len(p))
		if err := consume(p[:k]); err != nil {
			return err
		}
		p = p[k:]
	}
	return nil
}

func (c *pipe) Fail(err error) { c.failed = err }
func (c *pipe) Close() error   { return nil }

// peer is a Peer over two pipes.
type peer struct {
	send, recv *pipe
	heard      []opdesc.Desc
}

func (p *peer) Conns() (send, recv transport.Conn) { return p.send, p.recv }
func (p *peer) Heard(d opdesc.Desc)                { p.heard = append(p.heard, d) }
func (p *peer) Note(cur string) string             { return "note on " + cur }

// sum32 is an int32 Sum.
func sum32(dst, a, b []byte) error {
	for i := 0; i < len(dst); i += 4 {
		binary.LittleEndian.PutUint32(dst[i:], binary.LittleEndian.Uint32(a[i:])+binary.LittleEndian.Uint32(b[i:]))
	}
	return nil
}

// world is n ranks, each with a Peer per other rank, joined by pipes.
func world(n, pieceLen int) [][]*peer {
	peers := make([][]*peer, n)
	for r := range n {
		peers[r] = make([]*peer, n)
	}
	for r := range n {
		for q := range n {
			if r < q {
				a, b := newPipe(pieceLen), newPipe(pieceLen)
				peers[r][q], peers[q][r] = &peer{send: a, recv: b}, &peer{send: b, recv: a}
			}
		}
	}
	return peers
}

// allReduce runs an int32 Sum AllReduce of count elements on n ranks with
// algorithm a and returns the outputs, the inputs and every rank's error.
func allReduce(t *testing.T, n, pieceLen, count int, a algo.Algorithm) (outs, ins [][]byte, errList []error) {
	t.Helper()
	peers := world(n, pieceLen)
	rng := rand.New(rand.NewPCG(uint64(n), uint64(count)))
	outs, ins, errList = make([][]byte, n), make([][]byte, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		plan, err := algo.Build(algo.Params{Kind: algo.AllReduce, Algo: a, NRanks: n, Rank: r, Count: count, ElemSize: 4, ChunkBytes: 64})
		require.NoError(t, err)
		ins[r], outs[r] = make([]byte, 4*count), make([]byte, 4*count)
		for i := range count {
			binary.LittleEndian.PutUint32(ins[r][4*i:], rng.Uint32())
		}
		o := engine.Op{Kind: algo.AllReduce, Count: count, Type: gccl.Int32, Op: gccl.Sum}
		s := Setup[*peer]{Me: r, Desc: opdesc.Coll(&o, 7), Conns: peers[r], Sends: CountSends(plan.Steps), ElemSize: 4,
			Combine: sum32, Send: ins[r], Recv: outs[r], Scratch: make([]byte, plan.ScratchBytes)}
		wg.Go(func() {
			var run Runner[*peer]
			run.Reset(t.Context(), s)
			errList[r] = run.Run(plan.Steps)
		})
	}
	wg.Wait()
	return outs, ins, errList
}

// TestRunReduces: plans whose sends wait for the peer (posted to sender
// goroutines) and whose received pieces split elements still reduce every
// element exactly.
func TestRunReduces(t *testing.T) {
	for _, a := range []algo.Algorithm{algo.Ring, algo.Tree, algo.Direct} {
		for _, n := range []int{2, 3, 4} {
			t.Run(fmt.Sprintf("%v/%d", a, n), func(t *testing.T) {
				const count = 77 // not a multiple of the ranks or of a chunk
				outs, ins, errList := allReduce(t, n, 3, count, a)
				for r := range n {
					require.NoError(t, errList[r], "rank %d", r)
				}
				for i := range count {
					var want uint32
					for r := range n {
						want += binary.LittleEndian.Uint32(ins[r][4*i:])
					}
					for r := range n {
						require.Equal(t, want, binary.LittleEndian.Uint32(outs[r][4*i:]), "rank %d element %d", r, i)
					}
				}
			})
		}
	}
}

// TestRunRefuses: a rank whose operation differs from its peer's refuses
// the peer's message before using a byte, fails its receiving end, and
// reports gccl.ErrInvalidUsage.
func TestRunRefuses(t *testing.T) {
	peers := world(2, 3)
	send := []algo.Step{{Op: algo.Send, To: 1, Src: algo.Ref{Buf: algo.SendBuf}, Len: 16}}
	recv := []algo.Step{{Op: algo.Recv, From: 0, Dst: algo.Ref{Buf: algo.RecvBuf}, Len: 16}}
	mk := func(r, count int, steps []algo.Step) Setup[*peer] {
		o := engine.Op{Kind: algo.AllReduce, Count: count, Type: gccl.Int32, Op: gccl.Sum}
		return Setup[*peer]{Me: r, Desc: opdesc.Coll(&o, 0), Conns: peers[r], Sends: CountSends(steps), ElemSize: 4,
			Combine: sum32, Send: make([]byte, 16), Recv: make([]byte, 16)}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sender Runner[*peer]
	sender.Reset(ctx, mk(0, 4, send))
	done := make(chan error, 1)
	go func() { done <- sender.Run(send) }()
	var refuser Runner[*peer]
	refuser.Reset(ctx, mk(1, 5, recv)) // rank 1 runs another count
	err := refuser.Run(recv)
	require.Error(t, err)
	assert.Equal(t, gccl.InvalidUsage, gccl.Code(err), "%v", err)
	assert.True(t, errors.Is(err, opdesc.ErrDisagree), "%v", err)
	assert.Same(t, err, peers[1][0].recv.failed, "the refusing end is failed with the refusal")
	assert.Empty(t, peers[1][0].heard, "nothing heard from a refused message")
	require.NoError(t, <-done, "the peer took the message it refused")
}

// TestRunInPlaceCopy: the in-place copy of a direct AllGather writes
// nothing, so it does not wait for the rank's posted sends of the same
// bytes; were it to wait, every rank would wait for its sends before its
// first receive, and sends that complete only when the peer takes them
// would never complete (issue 16).
func TestRunInPlaceCopy(t *testing.T) {
	const n, count = 3, 5
	peers := world(n, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	outs, errList := make([][]byte, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		plan, err := algo.Build(algo.Params{Kind: algo.AllGather, Algo: algo.Direct, NRanks: n, Rank: r, Count: count, ElemSize: 4})
		require.NoError(t, err)
		outs[r] = make([]byte, 4*count*n)
		for i := range count {
			binary.LittleEndian.PutUint32(outs[r][4*(r*count+i):], uint32(100*r+i))
		}
		o := engine.Op{Kind: algo.AllGather, Count: count, Type: gccl.Int32}
		s := Setup[*peer]{Me: r, Desc: opdesc.Coll(&o, 0), Conns: peers[r], Sends: CountSends(plan.Steps), ElemSize: 4,
			Send: outs[r][4*r*count : 4*(r+1)*count], Recv: outs[r], Scratch: make([]byte, plan.ScratchBytes)}
		wg.Go(func() {
			var run Runner[*peer]
			run.Reset(ctx, s)
			errList[r] = run.Run(plan.Steps)
		})
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errList[r], "rank %d", r)
		for q := range n {
			for i := range count {
				assert.Equal(t, uint32(100*q+i), binary.LittleEndian.Uint32(outs[r][4*(q*count+i):]), "rank %d: rank %d's element %d", r, q, i)
			}
		}
	}
}

// TestCountSends counts each peer's sends.
func TestCountSends(t *testing.T) {
	steps := []algo.Step{{Op: algo.Send, To: 1}, {Op: algo.Recv, From: 2}, {Op: algo.RecvReduceSend, From: 2, To: 1}, {Op: algo.Send, To: 3}}
	assert.Equal(t, map[int]int{1: 2, 3: 1}, CountSends(steps))
}
