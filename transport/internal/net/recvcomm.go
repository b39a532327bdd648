package net

import (
	"errors"
	"io"
	gonet "net"
	"os"
	"sync"
	"syscall"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
)

// RecvComm is the receiving end of a connection (network.RecvComm). The
// control socket carries each transfer's header, matched with the next
// posted Irecv, and a small transfer's bytes, read straight into the
// Irecv's region; the helpers read the pieces of larger ones into it from
// the data sockets. Nothing is copied twice and nothing is allocated per
// transfer. The control socket is read by whoever gets there first: a
// goroutine that waits for the socket to be readable, or a Test or Wait of
// a posted receive, which reads what has arrived itself, without blocking
// and without a hand-off, up to the end of its own frame (and Wait polls so
// for the host's spin time, internal/futex.SpinTime, before it sleeps; not
// for a transfer in pieces, which the helpers read).
type RecvComm struct {
	*conn
	raw  syscall.RawConn // the control socket's descriptor; nil: only the reader goroutine reads it
	mark *lowMark        // its SO_RCVLOWAT: raised by spinning receives, lowered before a Wait sleeps; nil without raw

	// The posted receives not yet matched with a transfer, in order, and
	// the end of the stream: under pmu.
	pmu    sync.Mutex
	ring   [InFlight]*request
	head   int
	n      int
	ended  error         // the sender closed cleanly: receives posted from now fail with it
	postCh chan struct{} // cap 1: an Irecv tells a reader waiting for one

	// The control stream's reading state: under rmu, held only while
	// reading without blocking (with raw), or by the reader goroutine alone.
	rmu   sync.Mutex
	rd    ctrlState
	fd    uintptr
	bgF   func(fd uintptr) bool
	bgSt  status
	bgErr error
	inF   func(fd uintptr)
	until *request // the receive whose Test or Wait is reading (inF)
	inSt  status
	inErr error
	readF func([]byte) (int, error)

	failMu   sync.Mutex
	failSent bool
}

// ctrlState is where reading the control stream stands.
type ctrlState struct {
	phase  int // phHeader, phMatch, phPayload
	hdr    [HeaderSize]byte
	nhdr   int
	h      header
	q      *request // the receive an inline transfer fills
	dst    []byte   // the payload's destination
	ndst   int
	seq    uint64 // the next control frame's sequence number
	ending status // stEOF or stErr once the stream ended, else stMore
	bye    bool   // the stream ended with the sender's bye (an orderly Close)
	err    error
}

const (
	phHeader  = iota // reading a frame's header
	phMatch          // a transfer's header read, waiting for a posted receive
	phPayload        // reading an inline transfer's bytes or a failure record
)

// status is what advance stopped at.
type status int

const (
	stMore     status = iota // (within advance) go on reading
	stBlocked                // nothing more to read now
	stNeedPost               // a transfer arrived and no receive is posted
	stEOF                    // the sender closed cleanly, at a frame boundary
	stErr                    // the stream failed
)

// errWouldBlock is a non-blocking read that found nothing.
var errWouldBlock = errors.New("would block")

// NewRecvComm makes the receiving end over established sockets (socks[0]
// the control socket) and starts its reader and helpers; Close stops them.
func NewRecvComm(socks []gonet.Conn, o Options) (*RecvComm, error) {
	c, err := newConn(socks, o, "net recv")
	if err != nil {
		return nil, err
	}
	r := &RecvComm{conn: c, postCh: make(chan struct{}, 1)}
	if tc, ok := c.ctrl.(syscall.Conn); ok { // else (a wrapped socket) only the reader goroutine reads, blocking
		if r.raw, err = tc.SyscallConn(); err != nil {
			return nil, gccl.Errorf(gccl.SystemError, "socks", "control socket: %w", err)
		}
		r.mark = newLowMark(r.raw, r.fail)
	}
	r.bgF, r.inF, r.readF = r.readReady, r.readNow, r.readFD
	for _, q := range c.all {
		q.progress, q.mark = r.progress, r.mark
	}
	for _, q := range c.queues {
		r.wg.Go(func() { defer r.pin()(); r.helper(q) })
	}
	r.wg.Go(r.readCtrl)
	return r, nil
}

// Irecv posts a receive into r with tag (see network.RecvComm).
func (r *RecvComm) Irecv(reg network.Region, m network.MemHandle, tag uint32) (network.Request, error) {
	q, err := r.begin(reg, m, tag)
	if q == nil || err != nil {
		return nil, err
	}
	q.total = 0
	r.pmu.Lock()
	if ended := r.ended; ended != nil {
		r.pmu.Unlock()
		q.finish(0, ended)
		return q, nil
	}
	r.ring[(r.head+r.n)%InFlight] = q // never full: at most InFlight requests exist
	r.n++
	r.pmu.Unlock()
	select {
	case r.postCh <- struct{}{}:
	default:
	}
	return q, nil
}

// nextPosted takes the oldest posted receive, nil if none.
func (r *RecvComm) nextPosted() *request {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	if r.n == 0 {
		return nil
	}
	q := r.ring[r.head]
	r.ring[r.head] = nil
	r.head, r.n = (r.head+1)%InFlight, r.n-1
	return q
}

// Flush has nothing to do for host memory.
func (r *RecvComm) Flush(reg network.Region, m network.MemHandle) (network.Request, error) {
	if _, err := bytesOf(reg, m); err != nil {
		return nil, err
	}
	return doneRequest{}, nil
}

// readCtrl reads the control socket whenever it is readable (or, without
// raw, blocking), until the stream ends or the connection does.
func (r *RecvComm) readCtrl() {
	for {
		var st status
		var err error
		if r.raw != nil {
			if rerr := r.raw.Read(r.bgF); rerr != nil {
				r.fail(r.classify(rerr, "net recv"))
				return
			}
			st, err = r.bgSt, r.bgErr
		} else {
			r.rmu.Lock()
			st, err = r.advance(r.ctrl.Read, nil)
			r.rmu.Unlock()
		}
		switch st {
		case stNeedPost:
			select {
			case <-r.postCh:
			case <-r.quit:
				return
			}
		case stEOF, stErr:
			r.streamEnded(st, err)
			return
		}
	}
}

// readReady reads what the readable control socket holds (raw.Read's
// callback): false asks to wait until it is readable again.
func (r *RecvComm) readReady(fd uintptr) bool {
	r.rmu.Lock()
	r.fd = fd
	r.bgSt, r.bgErr = r.advance(r.readF, nil)
	r.rmu.Unlock()
	return r.bgSt != stBlocked
}

// progress reads what has arrived on the control socket for q, without
// blocking, unless another goroutine is reading it: Test and Wait of a
// posted receive call it, so the goroutine waiting for a transfer reads it
// itself. It stops at the end of q's own frame (q done, or matched with a
// transfer in pieces): the frames after it are the reader goroutine's, read
// while the caller consumes q, as before this fast path (while the mark is
// low; raised, they wait for the next Test or Wait: lowMark); reading them
// here would put them between q's arrival and its consumer (a message of
// several transfers would be read whole before its first transfer is
// reduced).
func (r *RecvComm) progress(q *request) {
	if r.raw == nil || !r.rmu.TryLock() {
		return
	}
	r.until = q
	r.inSt, r.inErr = stBlocked, nil
	if r.raw.Control(r.inF) != nil {
		r.inSt = stBlocked // closed: the reader goroutine reports it
	}
	r.until = nil
	st, err := r.inSt, r.inErr
	r.rmu.Unlock()
	if st == stEOF || st == stErr {
		r.streamEnded(st, err)
	}
}

func (r *RecvComm) readNow(fd uintptr) {
	r.fd = fd
	r.inSt, r.inErr = r.advance(r.readF, r.until)
}

// readFD reads the control socket's descriptor without blocking.
func (r *RecvComm) readFD(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(r.fd), b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// streamEnded acts on the end of the control stream: a clean close drains, a
// failure fails the connection.
func (r *RecvComm) streamEnded(st status, err error) {
	if st == stEOF {
		r.drain()
		return
	}
	r.fail(err)
}

// advance reads and handles control frames with read until it would block
// (read returns errWouldBlock), a transfer finds no posted receive, the
// stream ends (then it says so again on every later call), or, with until
// set, until's own frame has been handled (until done, or matched with a
// transfer in pieces: stBlocked); with rmu held.
func (r *RecvComm) advance(read func([]byte) (int, error), until *request) (status, error) {
	c := &r.rd
	for c.ending == stMore {
		if err := r.broken(); err != nil {
			return stErr, err
		}
		if until != nil && (until.state.Load() != reqPosted || until.pieces.Load()) {
			return stBlocked, nil // the rest is the reader goroutine's
		}
		st, err := stMore, error(nil)
		switch c.phase {
		case phHeader:
			st, err = r.readHeader(read)
		case phMatch:
			q := r.nextPosted()
			if q == nil {
				return stNeedPost, nil
			}
			if err = r.start(q, c.h); err == nil {
				if c.h.piece == 0 {
					c.phase, c.q, c.dst, c.ndst = phPayload, q, q.buf[:c.h.length], 0
				} else {
					c.next()
				}
			}
		case phPayload:
			st, err = r.readPayload(read)
		}
		switch {
		case err != nil:
			c.ending, c.err = stErr, err
		case st == stEOF:
			c.ending = stEOF
		case st == stBlocked:
			return stBlocked, nil
		}
	}
	return c.ending, c.err
}

// next moves to the next control frame.
func (c *ctrlState) next() {
	c.phase, c.nhdr, c.q, c.dst, c.ndst = phHeader, 0, nil, nil, 0
	c.seq++
}

// readHeader reads a frame's header and decodes it once whole.
func (r *RecvComm) readHeader(read func([]byte) (int, error)) (status, error) {
	c := &r.rd
	n, err := read(c.hdr[c.nhdr:])
	c.nhdr += n
	switch {
	case err == errWouldBlock:
		return stBlocked, nil
	case errors.Is(err, io.EOF) && c.nhdr == 0 && r.broken() == nil: // at a frame boundary: a clean close
		return stEOF, nil
	case errors.Is(err, io.EOF):
		return stErr, r.classify(io.ErrUnexpectedEOF, "net recv")
	case err != nil:
		return stErr, r.classify(err, "net recv")
	case c.nhdr < HeaderSize:
		return stMore, nil
	}
	h, err := parseHeader(c.hdr[:], c.seq)
	if err == nil && h.flags == flagBye {
		c.bye = true
		return stEOF, nil
	}
	if err == nil && h.flags != flagFail && h.flags != flagXfer {
		err = gccl.Errorf(gccl.RemoteError, "net recv", "control frame %d has flags %#x: the stream is corrupted", c.seq, h.flags)
	}
	if err != nil {
		return stErr, err
	}
	c.h = h
	if h.flags == flagFail {
		c.phase, c.q, c.dst, c.ndst = phPayload, nil, make([]byte, h.length), 0
	} else {
		c.phase = phMatch
	}
	return stMore, nil
}

// readPayload reads an inline transfer's bytes, or a failure record's,
// and acts on them once whole.
func (r *RecvComm) readPayload(read func([]byte) (int, error)) (status, error) {
	c := &r.rd
	if c.ndst < len(c.dst) {
		n, err := read(c.dst[c.ndst:])
		c.ndst += n
		switch {
		case err == errWouldBlock:
			return stBlocked, nil
		case errors.Is(err, io.EOF):
			return stErr, r.classify(io.ErrUnexpectedEOF, "net recv")
		case err != nil:
			return stErr, r.classify(err, "net recv")
		case c.ndst < len(c.dst):
			return stMore, nil
		}
	}
	if err := checkPayload(c.h, c.dst, r.checksum); err != nil {
		return stErr, err
	}
	if c.q == nil {
		return stErr, failure(c.h, c.dst, "net recv")
	}
	q := c.q
	c.next()
	q.finish(q.total, nil)
	return stMore, nil
}

// drain runs once the sender closed the connection cleanly (its control
// socket ended at a frame boundary): TCP delivered all it wrote before, so
// the transfers already announced are still received, their pieces read by
// the helpers from the data sockets (which end after them), and only
// receives that no transfer will fill fail, those posted now and those
// posted later, until Close. The connection is not failed: that would fail
// the transfers still being received and cut the data sockets short.
func (r *RecvComm) drain() {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	if r.ended == nil && r.rd.bye {
		r.ended = gccl.Errorf(gccl.RemoteError, "net recv", "%w (Close) after %d transfers", network.ErrPeerClosed, r.rd.seq)
	} else if r.ended == nil {
		r.ended = gccl.Errorf(gccl.RemoteError, "net recv", "the peer closed the connection after %d transfers, without a bye: it died or aborted", r.rd.seq)
	}
	for ; r.n > 0; r.head, r.n = (r.head+1)%InFlight, r.n-1 {
		r.ring[r.head].finish(0, r.ended)
		r.ring[r.head] = nil
	}
}

// start matches the transfer h announced with q and, for one cut into
// pieces, queues them to the helpers (advance reads an inline one).
func (r *RecvComm) start(q *request, h header) error {
	if h.tag != q.tag {
		return gccl.Errorf(gccl.InvalidUsage, "net recv", "the peer sent a transfer with tag %d where a receive with tag %d was posted: the two ends disagree on the order of transfers", h.tag, q.tag)
	}
	if h.total > uint64(len(q.buf)) {
		return gccl.Errorf(gccl.InvalidUsage, "net recv", "the peer sent %d bytes with tag %d into a receive of %d bytes: the two ends disagree on the size", h.total, h.tag, len(q.buf))
	}
	q.total = int(h.total)
	if h.piece == 0 {
		return nil
	}
	total, buf := q.total, q.buf // q may be finished and reused once the last piece is pushed
	q.pieces.Store(true)
	q.pending.Store(int32((total + h.piece - 1) / h.piece))
	for k, off := 0, 0; off < total; k, off = k+1, off+h.piece {
		sock := k % len(r.data)
		r.queues[sock%len(r.queues)].push(piece{r: q, sock: sock, seq: r.seq[sock], buf: buf[off:min(off+h.piece, total)]})
		r.seq[sock]++
	}
	return nil
}

// helper reads the pieces of its queue from their data sockets.
func (r *RecvComm) helper(q *pieceQueue) {
	var hdr [HeaderSize]byte
	for {
		p, ok := q.pop(r.quit)
		if !ok {
			return
		}
		if err := r.readPiece(p, hdr[:]); err != nil {
			r.fail(err)
			return
		}
		p.r.partDone()
	}
}

func (r *RecvComm) readPiece(p piece, hdr []byte) error {
	sock := r.data[p.sock]
	if _, err := io.ReadFull(sock, hdr); err != nil {
		return r.classify(err, "net recv")
	}
	h, err := parseHeader(hdr, p.seq)
	if err != nil {
		return err
	}
	if h.flags != flagPiece || h.length != len(p.buf) {
		return gccl.Errorf(gccl.RemoteError, "net recv", "data frame %d on socket %d: flags %#x, %d bytes, want a piece of %d: the stream is corrupted", h.seq, p.sock+1, h.flags, h.length, len(p.buf))
	}
	if _, err := io.ReadFull(sock, p.buf); err != nil {
		return r.classify(err, "net recv")
	}
	return checkPayload(h, p.buf, r.checksum)
}

// PollOnly (network.Poller) raises the control socket's SO_RCVLOWAT to
// the most the kernel allows, for a caller that Tests its receives in a
// loop and never Waits (the GPU proxy): a transfer's frame then no longer
// makes the socket readable, so it wakes neither the thread blocked in Go's
// network poller nor the reader goroutine, and the sender's write no longer
// pays for that wake-up (on a 2-CPU VM a bare 560-byte write took 11.3 µs
// with a poller thread to wake and 4.3 without; BenchmarkPolled's Isend
// 5.1-7.3 µs and 4.8-4.9). Test reads what has arrived as
// before (a non-blocking read ignores the mark); the end of the stream
// and a reset still wake the reader goroutine, which reports them. Frames
// beyond the oldest receive's wait for the next Test, not the reader.
// The mark then stays raised for good, whatever Waits do (lowMark): a
// Wait that sleeps after PollOnly is woken by a Test that reads its
// frame, by the end of the stream or at its deadline, not by the frame.
// Without a raw descriptor (a wrapped socket) it does nothing.
func (r *RecvComm) PollOnly() error {
	if r.mark == nil {
		return nil
	}
	ctl, opt := r.mark.raiseForGood()
	if ctl != nil {
		return r.classify(ctl, "net recv")
	}
	if opt != nil {
		return gccl.Errorf(gccl.SystemError, "net recv", "setting SO_RCVLOWAT on the control socket: %w", opt)
	}
	return nil
}

// Fail tells the sender, over the control socket, that this end failed with
// err (network.Failer): its Isends fail with it. Posted receives here fail
// with err too.
func (r *RecvComm) Fail(err error) {
	if err == nil || r.closed.Load() {
		return
	}
	if r.last() {
		writeFailure(r.ctrl, 0, err)
	}
	r.fail(err)
}

// last reports whether the caller is the first to write the one record
// that travels back (a failure, or the bye).
func (r *RecvComm) last() bool {
	r.failMu.Lock()
	defer r.failMu.Unlock()
	first := !r.failSent
	r.failSent = true
	return first
}

// Close writes the bye back to the sender (its later Isends fail with
// network.ErrPeerClosed) unless the connection failed or Fail wrote a
// failure, then closes the sockets and stops the goroutines; posted
// requests fail. Safe on nil and twice (Abort: no bye).
func (r *RecvComm) Close() error {
	if r == nil {
		return nil
	}
	if !r.closed.Load() && r.broken() == nil && r.last() {
		writeBye(r.ctrl, 0)
	}
	r.close()
	return nil
}
