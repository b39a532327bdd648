package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/transport/internal/msg"
)

// Options sets the geometry of a ring and the default deadline. The zero
// value selects the defaults.
type Options struct {
	SlotSize int           // bytes per slot, rounded up to 64; 0 = DefaultSlotSize
	Slots    int           // slots per ring; 0 = DefaultSlots
	Timeout  time.Duration // deadline of a wait whose ctx has none; 0 = wait.DefaultTimeout
}

func (o Options) geometry() (slotSize, nslots int, err error) {
	slotSize, nslots = o.SlotSize, o.Slots
	if slotSize == 0 {
		slotSize = DefaultSlotSize
	}
	if nslots == 0 {
		nslots = DefaultSlots
	}
	slotSize = (slotSize + lineSize - 1) / lineSize * lineSize
	if slotSize <= 0 || slotSize > MaxSlotSize {
		return 0, 0, gccl.Errorf(gccl.InvalidArgument, "SlotSize", "slot size %d out of range (1..%d)", o.SlotSize, MaxSlotSize)
	}
	if nslots <= 0 || nslots > MaxSlots {
		return 0, 0, gccl.Errorf(gccl.InvalidArgument, "Slots", "slot count %d out of range (1..%d)", o.Slots, MaxSlots)
	}
	return slotSize, nslots, nil
}

// end is what Sender and Receiver share: the mapping, its lock and the
// local closed state. Operations hold mu, so Close never unmaps under them.
type end struct {
	mu      sync.Mutex
	r       *ring
	closing atomic.Bool
	timeout time.Duration
	w       waiter // the wait of the operation in progress (under mu)
}

var errClosed = gccl.Errorf(gccl.InvalidUsage, "conn", "use of a closed shared-memory connection")

// begin locks the end for an operation; it fails once Close has started.
func (e *end) begin() error {
	if e.closing.Load() {
		return errClosed
	}
	e.mu.Lock()
	if e.r == nil {
		e.mu.Unlock()
		return errClosed
	}
	return nil
}

// close sets this side's closed flag in the header and unmaps the ring.
func (e *end) close(flagOff int) {
	e.closing.Store(true)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.r == nil {
		return
	}
	atomic.StoreUint32(e.r.u32(flagOff), 1)
	e.r.unmap()
	e.r = nil
}

// waiter is what ends a wait on the ring besides the counter it awaits:
// the context or deadline, this end's Close, the peer's own conditions
// (peer: its failure record or closed end) and, every liveEvery, whether
// the peer's process still runs. Its check runs between the counter's
// polls and naps (package futex).
type waiter struct {
	e        *end
	ctx      context.Context
	deadline time.Time
	what     string
	pidOff   int // the peer's pid in the header
	peer     func() error
	lastLive time.Time
}

// liveEvery is how often a wait checks that the peer's process runs.
const liveEvery = 10 * time.Millisecond

// setWaiter sets up the end's waiter (what, whose pid, the peer's
// conditions) once, when the end is made.
func (e *end) setWaiter(what string, peerPidOff int, peer func() error) {
	e.w = waiter{e: e, what: what, pidOff: peerPidOff, peer: peer}
}

// waiter starts the wait of an operation bounded by ctx (e.mu held): it
// reuses the end's waiter, so an operation allocates nothing.
func (e *end) waiter(ctx context.Context) *waiter {
	e.w.ctx, e.w.deadline, e.w.lastLive = ctx, wait.Deadline(ctx, e.timeout), time.Now()
	return &e.w
}

func (w *waiter) check() error {
	if err := w.peer(); err != nil {
		return err
	}
	if w.e.closing.Load() {
		return errClosed
	}
	if err := wait.CtxErr(w.ctx, w.deadline, w.what); err != nil {
		return err
	}
	if now := time.Now(); now.Sub(w.lastLive) >= liveEvery {
		w.lastLive = now
		if pid := atomic.LoadUint32(w.e.r.u32(w.pidOff)); !pidAlive(pid) {
			return gccl.Errorf(gccl.RemoteError, w.what, "peer process %d is gone", pid)
		}
	}
	return nil
}

// Sender is the producing end of a ring; it implements transport.Conn's Send.
type Sender struct {
	end
	path             string
	head             uint64
	slotSize, nslots int // the ring's geometry, fixed at Create
}

// Create makes the ring file at path and returns its producing end.
func Create(path string, o Options) (*Sender, error) {
	ss, ns, err := o.geometry()
	if err != nil {
		return nil, err
	}
	r, err := createRing(path, ss, ns)
	if err != nil {
		return nil, err
	}
	s := &Sender{end: end{r: r, timeout: o.Timeout}, path: path, slotSize: ss, nslots: ns}
	s.setWaiter("shm send", offReceiverPid, s.refused)
	return s, nil
}

// Free is how many slots of the ring are free now (0 once closed): as
// many slots as messages take (Takes) are sent without waiting for the
// consumer. Not safe concurrently with Send.
func (s *Sender) Free() int {
	if s.begin() != nil {
		return 0
	}
	defer s.mu.Unlock()
	return s.nslots - int(s.head-atomic.LoadUint64(s.r.u64(offTail)))
}

// Takes is how many slots a message of n bytes takes: one per slot's
// worth of bytes, and one for an empty message.
func (s *Sender) Takes(n int) int { return max(1, (n+s.slotSize-1)/s.slotSize) }

// Send copies one message, descriptor d and p, into the ring: its first
// slot carries d and the message's length (even when p is empty). It
// returns once every byte is in a slot.
func (s *Sender) Send(ctx context.Context, d msg.Desc, p []byte) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	r := s.r
	w := s.waiter(ctx)
	for first := true; first || len(p) > 0; {
		if err := s.refused(); err != nil {
			return err
		}
		if s.head-atomic.LoadUint64(r.u64(offTail)) >= uint64(r.nslots) {
			// Full: sleep until the consumer frees the oldest slot.
			if err := r.tailSeq().Await(uint32(s.head-uint64(r.nslots)+1), w.check); err != nil {
				return err
			}
			continue
		}
		hdr, data := r.slot(int(s.head % uint64(r.nslots)))
		k := copy(data, p)
		var flags uint32
		if first {
			flags = slotFirst
			binary.LittleEndian.PutUint64(hdr[slotMsg:], uint64(len(p)))
			copy(hdr[slotDesc:slotDesc+msg.DescSize], d[:])
		}
		binary.LittleEndian.PutUint32(hdr[slotFlags:], flags)
		atomic.StoreUint32(slotLenWord(hdr), uint32(k))
		s.head++
		atomic.StoreUint64(r.u64(offHead), s.head)
		r.headSeq().Advance(uint32(s.head))
		p, first = p[k:], false
	}
	return nil
}

// refused is the consumer's failure record or closed end, as an error.
func (s *Sender) refused() error {
	r := s.r
	if err := r.failure(offRecvFailed, "shm send"); err != nil {
		return err
	}
	if atomic.LoadUint32(r.u32(offRecvClosed)) != 0 {
		return gccl.Errorf(gccl.RemoteError, "shm send", "the receiving peer closed its end")
	}
	return nil
}

// Refusal is the consumer's failure record (it refused a message), nil if
// none.
func (s *Sender) Refusal() error {
	if s.begin() != nil {
		return nil
	}
	defer s.mu.Unlock()
	return s.r.failure(offRecvFailed, "shm send")
}

// Fail records err in the ring's header: the consumer's Recv fails with
// it once it has taken what is in the ring.
func (s *Sender) Fail(err error) {
	if err == nil || s.begin() != nil {
		return
	}
	defer s.mu.Unlock()
	s.r.setFailure(offSenderFailed, gccl.Code(err), err.Error())
}

// Recv is not supported on the producing end.
func (s *Sender) Recv(context.Context, func(msg.Desc, int) error, func([]byte) error) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Recv on the sending end of a shared-memory ring")
}

// Close marks the producer closed, unmaps the ring and unlinks its file (in
// case the consumer never opened it). Bytes already in the ring stay readable
// by the consumer. Close is safe to call twice.
func (s *Sender) Close() error {
	if s == nil {
		return nil
	}
	s.close(offSenderClosed)
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return gccl.Errorf(gccl.SystemError, s.path, "unlinking the shared-memory ring: %w", err)
	}
	return nil
}
