package transport

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/transport/network"
)

// netSend is the sending direction of a connection over a network
// provider: a transport.Conn made of the SendComm's transfers.
type netSend struct {
	mu      sync.Mutex
	sc      network.SendComm
	stage   *staging // a message's first transfer
	chunk   int
	timeout time.Duration
	tag     uint32
	err     error // sticky: a failed send breaks the stream
	ender   ender
	closed  bool
	reqs    [netDepth + 1]network.Request
	// staged is the transfer of the last short message, posted from the
	// staging buffer and not yet seen complete: Send returned once its
	// bytes were staged, and the next use of the buffer finishes it first.
	staged network.Request
}

func newNetSend(sc network.SendComm, chunk int, timeout time.Duration, aborting *atomic.Bool) (*netSend, error) {
	st, err := newStaging(sc, netHeaderSize+netInline)
	if err != nil {
		return nil, err
	}
	return &netSend{sc: sc, stage: st, chunk: chunk, timeout: timeout, ender: ender{aborting: aborting}}, nil
}

// ender ends a connection over a network provider: with Close while its
// stream is sound, with network.Abort once it broke (a transfer failed or
// timed out: the peer may be unreachable, behind a cut link, and an
// orderly close would wait for it; the socket provider meets that at once,
// the ucx provider would wait for acknowledgements, seconds each) or when
// its endpoint is aborting.
type ender struct {
	broken   atomic.Bool
	aborting *atomic.Bool // the endpoint's; nil for none
}

func (e *ender) end(c network.Comm) error {
	if e.broken.Load() || (e.aborting != nil && e.aborting.Load()) {
		return network.Abort(c)
	}
	return c.Close()
}

// netFailGrace bounds how long Fail and Close wait for the peer to take
// bytes (the peer may be gone or stalled).
const netFailGrace = 200 * time.Millisecond

var errNetClosed = gccl.Errorf(gccl.InvalidUsage, "conn", "use of a closed network connection")

// Send sends p as transfers: the first carries the header and up to
// netInline bytes of p, copied into the staging buffer; the rest of p goes
// in transfers of chunk bytes straight from p, pinned and registered for
// the call; netDepth transfers are in flight. A message of at most
// netInline bytes is then staged whole: Send returns once its transfer is
// posted (the socket provider writes it inline), without waiting for it to
// complete, and the next Send, Fail or Close finishes it (a failure
// breaks the stream there). So the connection buffers one short message,
// as a shared-memory ring buffers several (Buffered).
func (s *netSend) Send(ctx context.Context, d Desc, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errNetClosed
	case s.err != nil:
		return s.err
	}
	if r, ok := s.sc.(network.Refuser); ok {
		if err := r.Refusal(); err != nil {
			return err
		}
	}
	deadline := wait.Deadline(ctx, s.timeout)
	err := s.unstage(ctx, deadline)
	if err == nil {
		netHeader{length: uint64(len(p)), desc: d}.put(s.stage.b)
		first := copy(s.stage.b[netHeaderSize:], p[:min(len(p), netInline)])
		if first == len(p) {
			err = s.stageShort(ctx, deadline, first)
		} else {
			err = s.sendLong(ctx, deadline, p, first)
		}
	}
	if err != nil {
		s.err = err
		s.ender.broken.Store(true)
	}
	return err
}

// stageShort posts the staged message of n bytes; it stays staged if its
// transfer is not complete yet.
func (s *netSend) stageShort(ctx context.Context, deadline time.Time, n int) error {
	q, err := s.isend(ctx, deadline, s.stage.region(0, netHeaderSize+n), s.stage.m)
	if err != nil {
		return err
	}
	done, _, err := q.Test()
	if !done {
		s.staged = q
	}
	return err
}

// unstage finishes the staged message's transfer, if one is pending, so
// that the staging buffer may be reused.
func (s *netSend) unstage(ctx context.Context, deadline time.Time) error {
	q := s.staged
	if q == nil {
		return nil
	}
	_, err := finish(ctx, deadline, "net send", q)
	if err == nil || gccl.Code(err) != gccl.TimeoutError {
		s.staged = nil // spent
	}
	return err
}

// Free is 1 when the staging buffer is free now (its last message's
// transfer completed), so that a short message is sent without waiting,
// else 0 (Buffered). Not safe concurrently with Send.
func (s *netSend) Free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.err != nil {
		return 1 // Send fails at once
	}
	if s.staged != nil {
		done, _, err := s.staged.Test()
		if !done {
			return 0
		}
		s.staged = nil
		if err != nil {
			s.err = err
			s.ender.broken.Store(true)
		}
	}
	return 1
}

// Takes is 1 for a message that is staged whole (at most netInline bytes),
// else more than the connection ever has free (Buffered).
func (s *netSend) Takes(n int) int {
	if n <= netInline {
		return 1
	}
	return 2
}

// transfer sends one region and waits for it.
func (s *netSend) transfer(ctx context.Context, deadline time.Time, r network.Region, m network.MemHandle) error {
	q, err := s.isend(ctx, deadline, r, m)
	if err != nil {
		return err
	}
	_, err = finish(ctx, deadline, "net send", q)
	return err
}

func (s *netSend) isend(ctx context.Context, deadline time.Time, r network.Region, m network.MemHandle) (network.Request, error) {
	q, err := post(ctx, deadline, "net send", func() (network.Request, error) { return s.sc.Isend(r, m, s.tag) })
	if err == nil {
		s.tag++
	}
	return q, err
}

// sendLong sends the staged first transfer, then p[first:] in chunks,
// netDepth transfers in flight.
func (s *netSend) sendLong(ctx context.Context, deadline time.Time, p []byte, first int) error {
	var pin runtime.Pinner
	pin.Pin(&p[0])
	defer pin.Unpin()
	m, err := s.sc.Register(network.HostRegion(p))
	if err != nil {
		return err
	}
	defer s.sc.Deregister(m)
	whole := network.HostRegion(p)
	ntransfers := 1 + (len(p)-first+s.chunk-1)/s.chunk
	defer clear(s.reqs[:])
	for i := range ntransfers + netDepth {
		if j := i - netDepth; j >= 0 && j < ntransfers {
			if _, err := finish(ctx, deadline, "net send", s.reqs[j%len(s.reqs)]); err != nil {
				return err
			}
		}
		if i >= ntransfers {
			continue
		}
		r, mh := s.stage.region(0, netHeaderSize+first), s.stage.m
		if i > 0 {
			off := first + (i-1)*s.chunk
			r, mh = whole.Slice(off, min(s.chunk, len(p)-off)), m
		}
		q, err := s.isend(ctx, deadline, r, mh)
		if err != nil {
			return err
		}
		s.reqs[i%len(s.reqs)] = q
	}
	return nil
}

// Refusal is the receiver's failure record, where the provider carries one.
func (s *netSend) Refusal() error {
	if r, ok := s.sc.(network.Refuser); ok {
		return r.Refusal()
	}
	return nil
}

// Fail sends err to the receiver as a failure record in place of the next
// message (waiting at most netFailGrace, after the staged message); if the
// stream is already broken, or the record cannot go, it aborts the
// connection instead (network.Abort: the peer may not answer a close).
// Later Sends return err.
func (s *netSend) Fail(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.err != nil {
		_ = network.Abort(s.sc) // broken: the peer may not answer a close
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), netFailGrace)
	defer cancel()
	deadline := time.Now().Add(netFailGrace)
	if s.unstage(ctx, deadline) != nil {
		s.err = err
		s.ender.broken.Store(true)
		_ = network.Abort(s.sc) // the peer did not take the staged message
		return
	}
	s.err = err
	msg := []byte(err.Error())
	msg = msg[:min(len(msg), maxNetFailMsg)]
	code := gccl.Code(err)
	if code == gccl.Success {
		code = gccl.RemoteError
	}
	netHeader{flags: netFlagFail, length: uint64(len(msg)), code: uint32(code)}.put(s.stage.b)
	n := netHeaderSize + copy(s.stage.b[netHeaderSize:], msg)
	if s.transfer(ctx, deadline, s.stage.region(0, n), s.stage.m) != nil {
		s.ender.broken.Store(true)
		_ = network.Abort(s.sc)
	}
}

// Recv is not supported on the sending direction.
func (s *netSend) Recv(context.Context, func(Desc, int) error, func([]byte) error) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Recv on the sending direction of a network connection")
}

// Close finishes the staged message's transfer (within netFailGrace: the
// peer may be gone or stalled), closes the SendComm (interrupting a Send
// in progress, which then returns; aborting it where the stream broke or
// the endpoint aborts) and frees the staging buffer. Safe twice.
func (s *netSend) Close() error {
	if s.mu.TryLock() { // else a Send is in progress: interrupt it
		if !s.closed && s.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), netFailGrace)
			if err := s.unstage(ctx, time.Now().Add(netFailGrace)); err != nil {
				s.ender.broken.Store(true) // the peer did not take it: do not wait for it again
			}
			cancel()
		}
		s.mu.Unlock()
	}
	err := s.ender.end(s.sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.stage.free(s.sc)
	return err
}
