package net

import (
	"math"
	"sync"
	"syscall"
)

// raisedMark is the SO_RCVLOWAT of a control socket that no arrival should
// make readable; the kernel caps it (at half of tcp_rmem's maximum).
const raisedMark = math.MaxInt32

// lowMark is a RecvComm's control socket's SO_RCVLOWAT. While the mark is
// raised an arriving frame no longer makes the socket readable, so it
// wakes neither the thread blocked in Go's network poller nor the reader
// goroutine, a wake-up the sender's write pays for; a non-blocking read
// ignores the mark, and the end of the stream and a reset still wake the
// reader. It is raised while at least one goroutine spins on one of the
// connection's receives (request.spin reads the frame itself), and for
// good after PollOnly. Lowering it to 1 makes the kernel signal the socket
// readable at once if a frame arrived meanwhile (tcp_set_rcvlowat), so the
// reader goroutine then reads what no spinner took (TestRaisedFrameWakesSleeper).
type lowMark struct {
	raw      syscall.RawConn
	mu       sync.Mutex // orders the counts' transitions with their setsockopt
	spinners int        // goroutines in request.spin on a receive
	pollOnly bool       // PollOnly was called: the mark stays raised
	val      int        // setF's argument and result, under mu
	err      error
	setF     func(fd uintptr)
}

func newLowMark(raw syscall.RawConn) *lowMark {
	m := &lowMark{raw: raw}
	m.setF = m.setFD // bound once: a spin allocates nothing
	return m
}

// enter counts a spinner in; the first raises the mark. A failure (the
// socket closed: the reader goroutine reports it) leaves the mark as it was,
// which only costs the wake-up.
func (m *lowMark) enter() {
	m.mu.Lock()
	m.spinners++
	if m.spinners == 1 && !m.pollOnly {
		m.set(raisedMark)
	}
	m.mu.Unlock()
}

// leave counts a spinner out; the last lowers the mark back to 1 (the
// kernel's default), unless PollOnly keeps it raised.
func (m *lowMark) leave() {
	m.mu.Lock()
	m.spinners--
	if m.spinners == 0 && !m.pollOnly {
		m.set(1)
	}
	m.mu.Unlock()
}

// raiseForGood raises the mark for the connection's life (PollOnly).
// Control's error is the socket's (closed), the other setsockopt's.
func (m *lowMark) raiseForGood() (ctl, opt error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pollOnly = true
	return m.set(raisedMark)
}

// set sets SO_RCVLOWAT to v; with mu held.
func (m *lowMark) set(v int) (ctl, opt error) {
	m.val, m.err = v, nil
	ctl = m.raw.Control(m.setF)
	return ctl, m.err
}

func (m *lowMark) setFD(fd uintptr) {
	m.err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, m.val)
}
