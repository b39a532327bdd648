package badinput

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// class is a kind of caller mistake: the table's sections.
type class int

const (
	buffers class = iota
	arguments
	groups
	comms
	settings
	registration
	bootstrap
	disagree
	peers
	numClasses
)

var classNames = [numClasses]string{
	"buffers", "counts, types, operators, roots, peers, streams", "groups", "nil and closed communicators",
	"settings", "registration", "bootstrap and unique IDs", "ranks that disagree", "dead or stalled peers",
}

func (c class) String() string { return classNames[c] }

// badCase is one row of the table: what the caller did, and what gccl
// answers: the error code (gccl.Success: no error), the argument its
// *gccl.Error names ("" when not checked), words its message contains, and
// then, the rest of the answer, which run asserts itself.
type badCase struct {
	name  string
	class class
	did   string
	code  gccl.Result
	arg   string
	words []string
	then  string
	// shared: run uses the shared world (share()), which must stay usable:
	// a correct AllReduce on every rank afterwards gives the right sum.
	shared bool
	// run does what the caller did and returns the error to match
	// against code, arg and words (of the rank that made the mistake).
	run func(t *testing.T) error
}

// caseDeadline bounds each case: past it the case hung.
const caseDeadline = 20 * time.Second

// runCase runs c under caseDeadline and checks its answer.
func runCase(t *testing.T, c badCase) {
	finished := make(chan struct{})
	var err error
	go func() {
		defer close(finished)
		err = c.run(t)
	}()
	select {
	case <-finished:
	case <-time.After(caseDeadline):
		t.Fatalf("%s: no answer within %v (a hang)", c.name, caseDeadline)
	}
	if t.Failed() {
		return
	}
	t.Logf("answer: %v", err)
	expect(t, c.code, c.arg, c.words, err)
	if c.shared {
		shared.mustBeUsable(t)
	}
}

// expect asserts err is code (nil for gccl.Success), naming arg, with words.
func expect(t *testing.T, code gccl.Result, arg string, words []string, err error) {
	t.Helper()
	if code == gccl.Success {
		require.NoError(t, err)
		return
	}
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge), "want a *gccl.Error %v, got %v", code, err)
	assert.Equal(t, code, ge.Code, "%v", err)
	if arg != "" {
		assert.Equal(t, arg, ge.Arg, "%v", err)
	}
	for _, w := range words {
		assert.Contains(t, err.Error(), w)
	}
}

// world is n ranks of one host communicator in this process, a stream
// each, and the buffers the cases allocate (freed with the world, once its
// communicators are aborted and its streams done: a case that ends early,
// or leaves an operation waiting for a peer, must not free a buffer that
// a rank's operation still reads).
type world struct {
	comms   []*comm.Comm
	devs    []device.Device
	streams []gccl.Stream
	probe   []uintptr // mustBeUsable's buffers: send then recv, per rank

	mu    sync.Mutex
	bufs  [][2]uintptr // alloc's buffers: rank, address
	frees []func()     // atEnd's
}

// atEnd runs free when the world ends, after its communicators are
// aborted and its streams done (for buffers a case allocates itself).
func (w *world) atEnd(free func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.frees = append(w.frees, free)
}

// shared is the 2-rank world of the shared cases (TestBadInput makes it).
var shared *world

func share() *world { return shared }

// newWorld makes an n-rank blocking host communicator with the deadline
// timeout; the test's cleanup aborts it.
func newWorld(t *testing.T, n int, timeout time.Duration) *world {
	t.Helper()
	return newWorldConfig(t, n, &comm.Config{Timeout: timeout})
}

func newWorldConfig(t *testing.T, n int, cfg *comm.Config) *world {
	t.Helper()
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	c := *cfg
	c.Backend, c.Name = device.Host, t.Name()
	if c.Blocking == nil {
		blocking := true
		c.Blocking = &blocking
	}
	w := &world{comms: make([]*comm.Comm, n), devs: make([]device.Device, n), streams: make([]gccl.Stream, n)}
	errs := w.par(func(r int) (err error) {
		w.comms[r], err = comm.InitRankConfig(n, id, r, &c)
		return err
	})
	t.Cleanup(func() {
		for _, c := range w.comms {
			_ = c.Abort()
		}
		for r, s := range w.streams {
			if w.devs[r] != nil && s != 0 {
				_ = w.devs[r].Synchronize(s) // an aborted operation ends; its error is the case's to check
			}
		}
		for i, p := range w.probe {
			_ = w.devs[i/2].Free(p)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, b := range w.bufs {
			_ = w.devs[b[0]].Free(b[1])
		}
		for _, free := range w.frees {
			free()
		}
	})
	require.NoError(t, errors.Join(errs...))
	for r, cm := range w.comms {
		for gccl.Code(cm.Status()) == gccl.InProgress {
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, cm.Status())
		w.devs[r] = cm.Device()
		w.streams[r], err = w.devs[r].NewStream()
		require.NoError(t, err)
	}
	return w
}

// par runs f on every rank at once and returns each rank's error.
func (w *world) par(f func(r int) error) []error {
	errs := make([]error, len(w.comms))
	var wg sync.WaitGroup
	for r := range w.comms {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	return errs
}

// sync waits for rank r's stream.
func (w *world) sync(r int) error { return w.devs[r].Synchronize(w.streams[r]) }

// alloc returns n bytes of rank r's device memory poisoned with 0xA5,
// freed when the test ends.
func (w *world) alloc(t *testing.T, r, n int) uintptr {
	t.Helper()
	p, err := w.devs[r].Alloc(n)
	require.NoError(t, err)
	w.mu.Lock()
	w.bufs = append(w.bufs, [2]uintptr{uintptr(r), p})
	w.mu.Unlock()
	require.NoError(t, device.Memset(w.devs[r], p, poison, n))
	return p
}

// freed returns the address of an allocation of n bytes that was freed.
func (w *world) freed(t *testing.T, r, n int) uintptr {
	t.Helper()
	p, err := w.devs[r].Alloc(n)
	require.NoError(t, err)
	require.NoError(t, w.devs[r].Free(p))
	return p
}

// poison is the byte every output holds before an operation.
const poison = 0xA5

// junk is an address where nothing is ever mapped (below mmap_min_addr).
const junk uintptr = 0x1000

// fill writes count int32 values v(i) at p (host memory).
func fill(p uintptr, count int, v func(i int) int32) {
	b := device.HostBytes(p, 4*count)
	for i := range count {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v(i)))
	}
}

// ints reads count int32 values at p (host memory).
func ints(p uintptr, count int) []int32 {
	b := device.HostBytes(p, 4*count)
	out := make([]int32, count)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// untouched asserts the n bytes at p still hold the poison.
func untouched(t *testing.T, p uintptr, n int, what string) {
	t.Helper()
	for i, b := range device.HostBytes(p, n) {
		if b != poison {
			require.Failf(t, "output written", "%s: byte %d is %#x, want the poison %#x", what, i, b, poison)
		}
	}
}

// want asserts the count int32 at p are v(i).
func want(t *testing.T, p uintptr, count int, v func(i int) int32, what string) {
	t.Helper()
	got := ints(p, count)
	for i := range got {
		if got[i] != v(i) {
			require.Failf(t, "wrong result", "%s: element %d is %d, want %d", what, i, got[i], v(i))
		}
	}
}

// value is rank r's i-th input element in the cases' data.
func value(r, i int) int32 { return int32(1000*(r+1) + i%997) }

// sum is the AllReduce of value over n ranks.
func sum(n int) func(i int) int32 {
	return func(i int) int32 {
		var s int32
		for r := range n {
			s += value(r, i)
		}
		return s
	}
}

// mustBeUsable runs a correct AllReduce on every rank and checks the sum
// and that no rank has an async error.
func (w *world) mustBeUsable(t *testing.T) {
	t.Helper()
	const count = 1000
	if w.probe == nil {
		for r := range w.comms {
			for range 2 {
				p, err := w.devs[r].Alloc(4 * count)
				require.NoError(t, err)
				w.probe = append(w.probe, p)
			}
		}
	}
	errs := w.par(func(r int) error {
		send, recv := w.probe[2*r], w.probe[2*r+1]
		fill(send, count, func(i int) int32 { return value(r, i) })
		if err := device.Memset(w.devs[r], recv, poison, 4*count); err != nil {
			return err
		}
		if err := coll.AllReduce(w.comms[r], send, recv, count, gccl.Int32, gccl.Sum, w.streams[r]); err != nil {
			return err
		}
		return w.sync(r)
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d: the communicator must stay usable", r)
		require.NoError(t, w.comms[r].AsyncError(), "rank %d", r)
		want(t, w.probe[2*r+1], count, sum(len(w.comms)), fmt.Sprintf("rank %d: AllReduce after the case", r))
	}
}
