package net

import (
	"math"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gccl/gccl"
)

// raisedMark is the SO_RCVLOWAT of a control socket that no arrival should
// make readable; the kernel caps it (at half of tcp_rmem's maximum).
const raisedMark = math.MaxInt32

// lowMark is a RecvComm's control socket's SO_RCVLOWAT. While the mark is
// raised an arriving frame no longer makes the socket readable, so it
// wakes neither the thread blocked in Go's network poller nor the reader
// goroutine, a wake-up the sender's write pays for; a non-blocking read
// ignores the mark, and the end of the stream and a reset still wake the
// reader (as does the kernel under memory pressure or a closing receive
// window). Lowering the mark to 1 makes the kernel signal the socket
// readable at once if a frame arrived meanwhile (tcp_set_rcvlowat), so the
// reader goroutine then reads it.
//
// The mark is lowered lazily. A receive's Wait raises it as it starts to
// spin (request.spin: one setsockopt, the first time) and leaves it raised
// once its transfer is done, so back-to-back spinning Waits pay no system
// call; it is lowered only when a goroutine is about to block on the
// connection's frames: a receive's Wait that sleeps (its spin time over,
// or none, or a transfer in pieces), which request.Wait alone does in
// this package and its users (Test never blocks; the reader goroutine
// blocks on the socket itself, and the end of the stream, a reset, Close
// and a failure wake it whatever the mark). The invariant:
//
//	raised ⇒ no goroutine is blocked waiting for a frame of this control
//	socket; a goroutine lowers the mark before it blocks so.
//
// so whatever is buffered, or arrives, while anyone sleeps on the socket's
// frames wakes the reader goroutine, which reads it and wakes the sleeper.
// While the mark is raised and nobody waits, the frames of posted receives
// stay in the socket until a Test or Wait reads them (RecvComm.progress),
// instead of the reader goroutine reading them ahead.
//
// The transitions are ordered under mu: a sleeper counts itself in
// (sleepers) and lowers the mark under mu; a spinner raises it under mu
// only while no sleeper is counted. So a spinner that raises after a
// sleeper lowered cannot exist (it sees the sleeper), and a sleeper that
// counts itself in after a spinner raised lowers it again before it
// sleeps: no goroutine sleeps with the mark raised. A spinner that finds
// the mark raised skips mu (up, read atomically): skipping a raise is
// always safe.
//
// PollOnly raises the mark for good: its caller only Tests, so nobody ever
// blocks on the socket's frames (a Wait after PollOnly does not lower it,
// and is woken only by a Test reading its frame, or at its deadline).
type lowMark struct {
	raw      syscall.RawConn
	fail     func(error)  // fails the connection: a lowering that failed
	mu       sync.Mutex   // orders the transitions with their setsockopt
	up       atomic.Bool  // the mark is raised (written under mu)
	sleepers atomic.Int32 // goroutines blocked, or about to, on a frame (raised only while 0)
	pollOnly bool         // PollOnly was called: the mark stays raised; under mu
	val      int          // setF's argument and result, under mu
	err      error
	setF     func(fd uintptr)
}

// newLowMark returns the mark of raw's socket, 1 (the kernel's default)
// for now; fail ends the connection where lowering it fails.
func newLowMark(raw syscall.RawConn, fail func(error)) *lowMark {
	m := &lowMark{raw: raw, fail: fail}
	m.setF = m.setFD // bound once: a transition allocates nothing
	return m
}

// spinning raises the mark for a goroutine that starts to poll a receive's
// frame itself (request.spin), unless it is raised already (no system
// call), a goroutine sleeps on the socket's frames, or PollOnly keeps it
// raised. A failure (the socket closed: the reader goroutine reports it)
// leaves the mark low, which only costs the wake-up.
func (m *lowMark) spinning() {
	if m.up.Load() {
		return
	}
	m.mu.Lock()
	if !m.up.Load() && m.sleepers.Load() == 0 && !m.pollOnly {
		if ctl, opt := m.set(raisedMark); ctl == nil && opt == nil {
			m.up.Store(true)
		}
	}
	m.mu.Unlock()
}

// sleeping counts in a goroutine about to block until the reader
// goroutine reads a frame of the socket, and lowers the mark if it is
// raised (unless PollOnly keeps it so), so that the kernel signals a frame
// already buffered at once and any later one on arrival. The caller calls
// awake once it no longer blocks. A socket closed meanwhile needs nothing
// (closing finishes every request); a setsockopt that fails on an open
// socket fails the connection (gccl.ErrSystem), whose requests then
// finish with it, rather than leave the sleeper to its deadline.
func (m *lowMark) sleeping() {
	m.sleepers.Add(1)
	m.mu.Lock()
	if !m.up.Load() || m.pollOnly {
		m.mu.Unlock()
		return
	}
	ctl, opt := m.set(1)
	if ctl == nil && opt == nil {
		m.up.Store(false)
	}
	m.mu.Unlock()
	if ctl == nil && opt != nil {
		m.fail(gccl.Errorf(gccl.SystemError, "net recv", "lowering SO_RCVLOWAT on the control socket before a Wait sleeps: %w", opt))
	}
}

// awake counts out a goroutine that sleeping counted in. The mark stays
// as it is: the next spinner raises it, if no one else sleeps.
func (m *lowMark) awake() { m.sleepers.Add(-1) }

// raiseForGood raises the mark for the connection's life (PollOnly).
// Control's error is the socket's (closed), the other setsockopt's.
func (m *lowMark) raiseForGood() (ctl, opt error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pollOnly = true
	ctl, opt = m.set(raisedMark)
	if ctl == nil && opt == nil {
		m.up.Store(true)
	}
	return ctl, opt
}

// set sets SO_RCVLOWAT to v; with mu held.
func (m *lowMark) set(v int) (ctl, opt error) {
	m.val, m.err = v, nil
	ctl = m.raw.Control(m.setF)
	return ctl, m.err
}

// setFD is set's raw.Control callback.
func (m *lowMark) setFD(fd uintptr) {
	m.err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, m.val)
}
