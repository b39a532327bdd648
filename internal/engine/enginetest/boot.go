package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/gccl/gccl"
)

// Net is an in-process bootstrap network of N ranks; Rank(r) is rank r's
// handle. It implements engine.Bootstrap.
type Net struct {
	n      int
	mu     sync.Mutex
	rounds map[int]*gather
	boxes  map[[3]int]chan []byte // (from, to, tag)
	down   chan struct{}
	once   sync.Once
}

type gather struct {
	vals [][]byte
	in   []bool // the ranks that joined
	left int
	done chan struct{}
}

// NewNet returns a network for n ranks.
func NewNet(n int) *Net {
	return &Net{n: n, rounds: map[int]*gather{}, boxes: map[[3]int]chan []byte{}, down: make(chan struct{})}
}

// Boot is one rank's handle on a Net.
type Boot struct {
	net   *Net
	rank  int
	round int
}

// Rank returns rank r's bootstrap handle.
func (n *Net) Rank(r int) *Boot { return &Boot{net: n, rank: r} }

func (n *Net) gather(round int) *gather {
	n.mu.Lock()
	defer n.mu.Unlock()
	g, ok := n.rounds[round]
	if !ok {
		g = &gather{vals: make([][]byte, n.n), in: make([]bool, n.n), left: n.n, done: make(chan struct{})}
		n.rounds[round] = g
	}
	return g
}

func (n *Net) box(from, to, tag int) chan []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := [3]int{from, to, tag}
	if _, ok := n.boxes[k]; !ok {
		n.boxes[k] = make(chan []byte, 16)
	}
	return n.boxes[k]
}

func (b *Boot) wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-b.net.down:
		return gccl.Errorf(gccl.RemoteError, "bootstrap", "bootstrap aborted")
	case <-ctx.Done():
		return gccl.Errorf(gccl.TimeoutError, "bootstrap", "bootstrap wait expired")
	}
}

// AllGather returns every rank's b, in rank order.
func (b *Boot) AllGather(ctx context.Context, v []byte) ([][]byte, error) {
	g := b.net.gather(b.round)
	b.round++
	b.net.mu.Lock()
	g.vals[b.rank], g.in[b.rank] = bytes.Clone(v), true
	g.left--
	if g.left == 0 {
		close(g.done)
	}
	b.net.mu.Unlock()
	if err := b.wait(ctx, g.done); err != nil {
		return nil, fmt.Errorf("%w (ranks %v have not joined)", err, b.net.absent(g))
	}
	return g.vals, nil
}

// absent is the ranks that have not joined g (as the real bootstrap's
// errors, which name the ranks a collective lacks).
func (n *Net) absent(g *gather) []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	var rs []int
	for r, in := range g.in {
		if !in {
			rs = append(rs, r)
		}
	}
	return rs
}

// Barrier waits for every rank.
func (b *Boot) Barrier(ctx context.Context) error {
	_, err := b.AllGather(ctx, nil)
	return err
}

// Send passes v to peer under tag.
func (b *Boot) Send(ctx context.Context, peer, tag int, v []byte) error {
	select {
	case b.net.box(b.rank, peer, tag) <- bytes.Clone(v):
		return nil
	case <-b.net.down:
		return gccl.Errorf(gccl.RemoteError, "bootstrap", "bootstrap aborted")
	case <-ctx.Done():
		return gccl.Errorf(gccl.TimeoutError, "bootstrap", "bootstrap send expired")
	}
}

// Recv takes what peer sent under tag.
func (b *Boot) Recv(ctx context.Context, peer, tag int) ([]byte, error) {
	select {
	case v := <-b.net.box(peer, b.rank, tag):
		return v, nil
	case <-b.net.down:
		return nil, gccl.Errorf(gccl.RemoteError, "bootstrap", "bootstrap aborted")
	case <-ctx.Done():
		return nil, gccl.Errorf(gccl.TimeoutError, "bootstrap", "bootstrap receive expired")
	}
}

// Close does nothing: the network lives as long as the test.
func (b *Boot) Close() error { return nil }

// Abort fails every rank's pending and future waits.
func (b *Boot) Abort() error {
	b.net.once.Do(func() { close(b.net.down) })
	return nil
}
