package net

import (
	"errors"
	"io"
	gonet "net"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
)

// SendComm is the sending end of a connection (network.SendComm). Isend
// writes a transfer's header, and a small transfer's bytes with it, on the
// control socket from the calling goroutine, without blocking and without a
// hand-off; what the socket does not take at once, and the pieces of larger
// transfers, go to helper goroutines.
type SendComm struct {
	*conn
	raw     syscall.RawConn // the control socket's descriptor; nil: no fast path
	mu      sync.Mutex      // orders Isends
	ctrlSeq uint64          // next control frame (under mu)
	ctrlQ   chan *request
	busy    atomic.Int32 // control frames queued or being written by the control writer
	refused atomic.Pointer[error]
	gone    atomic.Pointer[error] // the receiver closed its end cleanly: Isends fail with it

	// the fast path's writev, under mu
	iov    [2]syscall.Iovec
	iovcnt int
	wrote  int
	werr   syscall.Errno
	writeF func(fd uintptr) bool
}

// NewSendComm makes the sending end over established sockets: socks[0] is
// the control socket, the others carry pieces. It starts the helpers, the
// control writer and the reader of the receiver's failure records.
func NewSendComm(socks []gonet.Conn, o Options) (*SendComm, error) {
	c, err := newConn(socks, o, "net send")
	if err != nil {
		return nil, err
	}
	s := &SendComm{conn: c, ctrlQ: make(chan *request, InFlight)}
	if tc, ok := c.ctrl.(syscall.Conn); ok { // else (a wrapped socket) every control frame goes to the writer
		if s.raw, err = tc.SyscallConn(); err != nil {
			return nil, gccl.Errorf(gccl.SystemError, "socks", "control socket: %w", err)
		}
	}
	s.writeF = s.writev
	for _, q := range c.queues {
		s.wg.Go(func() { defer s.pin()(); s.helper(q) })
	}
	s.wg.Go(s.ctrlWriter)
	s.wg.Go(s.readBack)
	return s, nil
}

// Isend posts the send of r with tag (see network.SendComm).
func (s *SendComm) Isend(r network.Region, m network.MemHandle, tag uint32) (network.Request, error) {
	if p := s.gone.Load(); p != nil && s.broken() == nil {
		return nil, *p
	}
	q, err := s.begin(r, m, tag)
	if q == nil || err != nil {
		return nil, err
	}
	buf := q.buf
	q.total = len(buf)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := header{flags: flagXfer, seq: s.ctrlSeq, total: uint64(len(buf)), tag: tag}
	s.ctrlSeq++
	inline := len(buf) <= MaxInline
	q.pieces.Store(!inline)
	if inline {
		h.setPayload(buf, s.checksum)
		q.pending.Store(1)
	} else {
		h.piece = pieceSize(len(buf), len(s.data))
		q.pending.Store(int32(1 + (len(buf)+h.piece-1)/h.piece))
	}
	h.put(q.hdr[:])
	payload := buf[:h.length]
	if !inline {
		s.post(q, h.piece)
	}
	if s.raw != nil && s.busy.Load() == 0 {
		n, err := s.tryWrite(q.hdr[:], payload)
		if err != nil {
			s.fail(s.classify(err, "net send"))
			return q, nil
		}
		if n == HeaderSize+len(payload) {
			q.partDone()
			return q, nil
		}
		q.rest = cut(q.hdr[:], payload, n)
	} else {
		q.rest = [2][]byte{q.hdr[:], payload}
	}
	s.busy.Add(1)
	s.ctrlQ <- q
	return q, nil
}

// post queues q's pieces, piece k on data socket k mod n, with mu held.
func (s *SendComm) post(q *request, size int) {
	for k, off := 0, 0; off < len(q.buf); k, off = k+1, off+size {
		sock := k % len(s.data)
		s.queues[sock%len(s.queues)].push(piece{r: q, sock: sock, seq: s.seq[sock], buf: q.buf[off:min(off+size, len(q.buf))]})
		s.seq[sock]++
	}
}

// cut returns what of a then b remains after the first n bytes.
func cut(a, b []byte, n int) [2][]byte {
	if n < len(a) {
		return [2][]byte{a[n:], b}
	}
	return [2][]byte{nil, b[n-len(a):]}
}

// tryWrite writes what the control socket takes now of a then b, without
// blocking (writev on the non-blocking descriptor).
func (s *SendComm) tryWrite(a, b []byte) (int, error) {
	s.iov[0].Base, s.iovcnt = &a[0], 1
	s.iov[0].SetLen(len(a))
	if len(b) > 0 {
		s.iov[1].Base, s.iovcnt = &b[0], 2
		s.iov[1].SetLen(len(b))
	}
	s.wrote, s.werr = 0, 0
	if err := s.raw.Write(s.writeF); err != nil {
		return 0, err
	}
	s.iov = [2]syscall.Iovec{}
	if s.werr != 0 && s.werr != syscall.EAGAIN && s.werr != syscall.EINTR {
		return 0, s.werr
	}
	return s.wrote, nil
}

func (s *SendComm) writev(fd uintptr) bool {
	n, _, errno := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&s.iov[0])), uintptr(s.iovcnt))
	if errno == 0 {
		s.wrote = int(n)
	}
	s.werr = errno
	return true
}

// ctrlWriter writes, in order, the control frames the fast path could not
// finish.
func (s *SendComm) ctrlWriter() {
	var bufs gonet.Buffers
	for {
		var q *request
		select {
		case q = <-s.ctrlQ:
		case <-s.quit:
			return
		}
		bufs = append(bufs[:0], q.rest[0], q.rest[1])
		_, err := bufs.WriteTo(s.ctrl)
		s.busy.Add(-1)
		if err != nil {
			s.fail(s.classify(err, "net send"))
			return
		}
		q.partDone()
	}
}

// helper writes the pieces of its queue, each a frame on its data socket.
func (s *SendComm) helper(q *pieceQueue) {
	var hdr [HeaderSize]byte
	// WriteTo makes its Buffers escape and consumes them: one Buffers and
	// one array for the helper's life, so that a piece allocates nothing.
	bufs, arr := new(gonet.Buffers), make([][]byte, 2)
	for {
		p, ok := q.pop(s.quit)
		if !ok {
			return
		}
		h := header{flags: flagPiece, seq: p.seq}
		h.setPayload(p.buf, s.checksum)
		h.put(hdr[:])
		arr[0], arr[1] = hdr[:], p.buf
		*bufs = arr
		_, err := bufs.WriteTo(s.data[p.sock])
		arr[1] = nil // the transfer's memory is the caller's again
		if err != nil {
			s.fail(s.classify(err, "net send"))
			return
		}
		p.r.partDone()
	}
}

// readBack waits for the receiver's failure record on the control socket
// (the only bytes that travel back). The receiver closing its end cleanly
// fails later Isends but not those posted: the receiver may have taken
// all their bytes before it closed, while the writer or a helper had not
// yet counted its last write done; a transfer it did not take fails in its
// own writes (the peer resets the socket).
func (s *SendComm) readBack() {
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(s.ctrl, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) && s.broken() == nil {
			gone := gccl.Errorf(gccl.RemoteError, "net send", "the peer closed the connection")
			s.gone.Store(&gone)
			return
		}
		s.fail(s.classify(err, "net send"))
		return
	}
	h, err := parseHeader(hdr[:], 0)
	if err == nil && h.flags == flagBye {
		gone := gccl.Errorf(gccl.RemoteError, "net send", "%w (Close)", network.ErrPeerClosed)
		s.gone.Store(&gone)
		return
	}
	if err == nil && h.flags != flagFail {
		err = gccl.Errorf(gccl.RemoteError, "net send", "the receiver sent a frame with flags %#x: the stream is corrupted", h.flags)
	}
	if err != nil {
		s.fail(err)
		return
	}
	msg := make([]byte, h.length)
	if _, err := io.ReadFull(s.ctrl, msg); err != nil {
		s.fail(s.classify(err, "net send"))
		return
	}
	if err := checkPayload(h, msg, s.checksum); err != nil {
		s.fail(err)
		return
	}
	ferr := failure(h, msg, "net send")
	s.refused.Store(&ferr)
	s.fail(ferr)
}

// Fail tells the receiver that this end failed with err (network.Failer):
// a failure record on the control socket, after the last control frame,
// fails its posted and later receives with err's code and message. Where
// the control socket is not at a frame boundary (the control writer still
// has frames) or the connection is already broken, it aborts the
// connection instead, which the receiver sees as gccl.ErrRemote. This
// end's pending and later Isends fail with err.
func (s *SendComm) Fail(err error) {
	if err == nil || s.closed.Load() {
		return
	}
	s.mu.Lock()
	wrote := false
	if s.broken() == nil && s.busy.Load() == 0 {
		writeLast(s.ctrl, failureFrame(s.ctrlSeq, err))
		s.ctrlSeq++
		wrote = true
	}
	s.mu.Unlock()
	s.fail(err)
	if !wrote {
		_ = s.Abort()
	}
}

// Refusal is the receiver's failure record (network.Refuser), nil if none came.
func (s *SendComm) Refusal() error {
	if p := s.refused.Load(); p != nil {
		return *p
	}
	return nil
}

// Close writes the bye after the last control frame, where the control
// socket is at a frame boundary (no frame left to the control writer),
// so that the receiver takes the end as orderly (network.ErrPeerClosed);
// then it closes the sockets and stops the goroutines; posted requests
// fail. Safe on nil and twice (Abort: no bye).
func (s *SendComm) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if !s.closed.Load() && s.broken() == nil && s.busy.Load() == 0 {
		writeBye(s.ctrl, s.ctrlSeq)
		s.ctrlSeq++
	}
	s.mu.Unlock()
	s.close()
	return nil
}
