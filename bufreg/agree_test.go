package bufreg

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatherer is an in-process all-gather among n goroutine ranks.
type gatherer struct {
	mu   sync.Mutex
	got  [][]byte
	left int
	done chan struct{}
}

func newGatherer(n int) *gatherer {
	return &gatherer{got: make([][]byte, n), left: n, done: make(chan struct{})}
}

func (g *gatherer) rank(r int) func(context.Context, []byte) ([][]byte, error) {
	return func(ctx context.Context, mine []byte) ([][]byte, error) {
		g.mu.Lock()
		g.got[r] = append([]byte(nil), mine...)
		g.left--
		if g.left == 0 {
			close(g.done)
		}
		g.mu.Unlock()
		select {
		case <-g.done:
			return g.got, nil
		case <-ctx.Done():
			return nil, gccl.Errorf(gccl.TimeoutError, "allgather", "%v", ctx.Err())
		}
	}
}

// agreeAll runs Agree on every rank and returns each rank's answer.
func agreeAll(t *testing.T, descs []Desc) ([]bool, []error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g := newGatherer(len(descs))
	oks, errs := make([]bool, len(descs)), make([]error, len(descs))
	var wg sync.WaitGroup
	for r := range descs {
		wg.Go(func() { oks[r], errs[r] = Agree(ctx, g.rank(r), descs[r]) })
	}
	wg.Wait()
	return oks, errs
}

// ranksWith makes n descriptors of nb buffers, all registered at the
// same random offsets (or none registered).
func ranksWith(r *rand.Rand, n, nb int, registered, same bool) []Desc {
	offs := make([]int, nb)
	for i := range offs {
		offs[i] = r.IntN(1 << 30)
	}
	descs := make([]Desc, n)
	for k := range descs {
		descs[k].SameOffset = same
		for i := range nb {
			descs[k].Bufs = append(descs[k].Bufs, Buf{Name: []string{"sendbuff", "recvbuff"}[i%2], Registered: registered, Offset: offs[i]})
		}
	}
	return descs
}

func TestAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 20 {
		n, nb := 2+r.IntN(7), 1+r.IntN(3)
		victim, buf := r.IntN(n), r.IntN(nb)

		oks, errs := agreeAll(t, ranksWith(r, n, nb, true, true))
		for k := range n {
			require.NoError(t, errs[k])
			assert.True(t, oks[k], "all registered, same offsets: zero-copy")
		}
		oks, errs = agreeAll(t, ranksWith(r, n, nb, false, true))
		for k := range n {
			require.NoError(t, errs[k])
			assert.False(t, oks[k], "none registered: staging")
		}

		mixed := ranksWith(r, n, nb, true, true)
		mixed[victim].Bufs[buf].Registered = false
		_, errs = agreeAll(t, mixed)
		for k := range n {
			requireCode(t, errs[k], gccl.InvalidUsage)
			assert.Contains(t, errs[k].Error(), mixed[0].Bufs[buf].Name)
		}

		shifted := ranksWith(r, n, nb, true, true)
		shifted[victim].Bufs[buf].Offset += 1 + r.IntN(4096)
		if victim == 0 {
			victim = 1 // the message names a rank other than 0
			shifted[0].Bufs[buf].Offset, shifted[1].Bufs[buf].Offset = shifted[1].Bufs[buf].Offset, shifted[0].Bufs[buf].Offset
		}
		_, errs = agreeAll(t, shifted)
		for k := range n {
			requireCode(t, errs[k], gccl.InvalidUsage)
		}
		for k := range shifted {
			shifted[k].SameOffset = false
		}
		oks, errs = agreeAll(t, shifted)
		for k := range n {
			require.NoError(t, errs[k], "offsets may differ where the path does not need them equal")
			assert.True(t, oks[k])
		}

		for k := range mixed {
			mixed[k].Fallback = true
		}
		oks, errs = agreeAll(t, mixed)
		for k := range n {
			require.NoError(t, errs[k], "graph registration falls back together")
			assert.False(t, oks[k])
		}
		mixed[victim].Fallback = false
		_, errs = agreeAll(t, mixed)
		for k := range n {
			requireCode(t, errs[k], gccl.InvalidUsage)
		}

		diff := ranksWith(r, n, nb, true, true)
		diff[victim].Bufs = append(diff[victim].Bufs, Buf{Registered: true})
		_, errs = agreeAll(t, diff)
		for k := range n {
			requireCode(t, errs[k], gccl.InvalidUsage)
		}
	}
}

func TestAgreeErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := Agree(ctx, nil, Desc{})
	requireCode(t, err, gccl.InvalidArgument)
	_, err = Agree(ctx, newGatherer(2).rank(0), Desc{})
	requireCode(t, err, gccl.TimeoutError) // the peer never comes
	garbage := func(context.Context, []byte) ([][]byte, error) { return [][]byte{{descMagic, 1, 0, 0}, {1, 2, 3}}, nil }
	_, err = Agree(context.Background(), garbage, Desc{})
	requireCode(t, err, gccl.InternalError)
	_, err = Agree(context.Background(), func(context.Context, []byte) ([][]byte, error) { return nil, nil }, Desc{})
	requireCode(t, err, gccl.InternalError)
	_, err = Desc{Bufs: make([]Buf, maxBufs+1)}.MarshalBinary()
	requireCode(t, err, gccl.InvalidArgument)
}

func TestDescRoundTripAndDescFor(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for range 100 {
		d := Desc{SameOffset: r.IntN(2) == 1, Fallback: r.IntN(2) == 1}
		for range r.IntN(maxBufs + 1) {
			d.Bufs = append(d.Bufs, Buf{Registered: r.IntN(2) == 1, Offset: r.IntN(1 << 40)})
		}
		b, err := d.MarshalBinary()
		require.NoError(t, err)
		var got Desc
		require.NoError(t, got.UnmarshalBinary(b))
		if len(d.Bufs) == 0 {
			d.Bufs = []Buf{}
		}
		assert.Equal(t, d, got)
	}
	c := hostComm(t)
	p, err := MemAlloc(c.dev, 1<<16)
	require.NoError(t, err)
	h, err := Register(c, p, 1<<15)
	require.NoError(t, err)
	d := DescFor(c, []string{"a", "b"}, []uintptr{p + 100, p + 1<<15}, []int{64, 64})
	assert.Equal(t, []Buf{{Name: "a", Registered: true, Offset: 100}, {Name: "b"}}, d.Bufs)
	require.NoError(t, Deregister(h))
	require.NoError(t, MemFree(p))
}

func FuzzDescUnmarshal(f *testing.F) {
	b, _ := Desc{SameOffset: true, Bufs: []Buf{{Registered: true, Offset: 7}, {}}}.MarshalBinary()
	f.Add(b)
	f.Add([]byte{descMagic, descVersion, 0, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Desc
		if d.UnmarshalBinary(b) != nil {
			return
		}
		again, err := d.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, b, again, "decoding is exact")
	})
}
