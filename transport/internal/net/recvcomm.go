package net

import (
	"errors"
	"io"
	gonet "net"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
)

// RecvComm is the receiving end of a connection (network.RecvComm). One
// goroutine reads the control socket: each transfer's header, matched with
// the next posted Irecv, and a small transfer's bytes straight into the
// Irecv's region; the helpers read the pieces of larger ones into it from
// the data sockets. Nothing is copied twice and nothing is allocated per
// transfer.
type RecvComm struct {
	*conn
	posted   chan *request
	failMu   sync.Mutex
	failSent bool
}

// NewRecvComm makes the receiving end over established sockets (socks[0]
// the control socket) and starts its reader and helpers; Close stops them.
func NewRecvComm(socks []gonet.Conn, o Options) (*RecvComm, error) {
	c, err := newConn(socks, o, "net recv")
	if err != nil {
		return nil, err
	}
	r := &RecvComm{conn: c, posted: make(chan *request, InFlight)}
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
	r.posted <- q // never blocks: at most InFlight requests exist
	return q, nil
}

// Flush has nothing to do for host memory.
func (r *RecvComm) Flush(reg network.Region, m network.MemHandle) (network.Request, error) {
	if _, err := bytesOf(reg, m); err != nil {
		return nil, err
	}
	return doneRequest{}, nil
}

// readCtrl reads the control socket: transfer headers in sequence, each
// matched with the next posted receive.
func (r *RecvComm) readCtrl() {
	var hdr [HeaderSize]byte
	for seq := uint64(0); ; seq++ {
		if _, err := io.ReadFull(r.ctrl, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) && r.broken() == nil { // at a frame boundary: a clean close
				r.drain(seq)
				return
			}
			r.fail(r.classify(err, "net recv"))
			return
		}
		h, err := parseHeader(hdr[:], seq)
		if err == nil && h.flags == flagFail {
			err = r.failureRecord(h)
		} else if err == nil && h.flags != flagXfer {
			err = gccl.Errorf(gccl.RemoteError, "net recv", "control frame %d has flags %#x: the stream is corrupted", seq, h.flags)
		}
		if err != nil {
			r.fail(err)
			return
		}
		var q *request
		select {
		case q = <-r.posted:
		case <-r.quit:
			return
		}
		if err := r.start(q, h); err != nil {
			r.fail(err)
			return
		}
	}
}

// drain runs once the sender closed the connection cleanly (its control
// socket ended at a frame boundary, after n transfers): TCP delivered all
// it wrote before, so the transfers already announced are still received,
// their pieces read by the helpers from the data sockets (which end after
// them), and only receives that no transfer will fill fail, those posted
// now and those posted later, until Close. The connection is not failed:
// that would fail the transfers still being received and cut the data
// sockets short.
func (r *RecvComm) drain(n uint64) {
	err := gccl.Errorf(gccl.RemoteError, "net recv", "the peer closed the connection after %d transfers", n)
	for {
		select {
		case q := <-r.posted:
			q.finish(0, err)
		case <-r.quit:
			return
		}
	}
}

// failureRecord reads the sender's failure record and returns its error.
func (r *RecvComm) failureRecord(h header) error {
	msg := make([]byte, h.length)
	if _, err := io.ReadFull(r.ctrl, msg); err != nil {
		return r.classify(err, "net recv")
	}
	if err := checkPayload(h, msg); err != nil {
		return err
	}
	return failure(h, msg, "net recv")
}

// start receives the transfer h announced into q: inline from the control
// socket, or as pieces queued to the helpers.
func (r *RecvComm) start(q *request, h header) error {
	if h.tag != q.tag {
		return gccl.Errorf(gccl.InvalidUsage, "net recv", "the peer sent a transfer with tag %d where a receive with tag %d was posted: the two ends disagree on the order of transfers", h.tag, q.tag)
	}
	if h.total > uint64(len(q.buf)) {
		return gccl.Errorf(gccl.InvalidUsage, "net recv", "the peer sent %d bytes with tag %d into a receive of %d bytes: the two ends disagree on the size", h.total, h.tag, len(q.buf))
	}
	q.total = int(h.total)
	if h.piece == 0 {
		data := q.buf[:h.length]
		if _, err := io.ReadFull(r.ctrl, data); err != nil {
			return r.classify(err, "net recv")
		}
		if err := checkPayload(h, data); err != nil {
			return err
		}
		q.finish(q.total, nil)
		return nil
	}
	total, buf := q.total, q.buf // q may be finished and reused once the last piece is pushed
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
	return checkPayload(h, p.buf)
}

// Fail tells the sender, over the control socket, that this end failed with
// err (network.Failer): its Isends fail with it. Posted receives here fail
// with err too.
func (r *RecvComm) Fail(err error) {
	if err == nil || r.closed.Load() {
		return
	}
	r.failMu.Lock()
	sent := r.failSent
	r.failSent = true
	r.failMu.Unlock()
	if !sent {
		writeFailure(r.ctrl, 0, err)
	}
	r.fail(err)
}

// Close closes the sockets and stops the goroutines; posted requests fail.
// Safe on nil and twice.
func (r *RecvComm) Close() error {
	if r == nil {
		return nil
	}
	r.close()
	return nil
}
