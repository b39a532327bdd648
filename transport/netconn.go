package transport

import (
	"context"
	"runtime"
	"sync"
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
	closed  bool
	reqs    [netDepth + 1]network.Request
}

func newNetSend(sc network.SendComm, chunk int, timeout time.Duration) (*netSend, error) {
	st, err := newStaging(sc, netHeaderSize+netInline)
	if err != nil {
		return nil, err
	}
	return &netSend{sc: sc, stage: st, chunk: chunk, timeout: timeout}, nil
}

var errNetClosed = gccl.Errorf(gccl.InvalidUsage, "conn", "use of a closed network connection")

// Send sends p as transfers: the first carries the header and up to
// netInline bytes of p, copied into the staging buffer; the rest of p goes
// in transfers of chunk bytes straight from p, pinned and registered for
// the call; netDepth transfers are in flight.
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
	netHeader{length: uint64(len(p)), desc: d}.put(s.stage.b)
	first := copy(s.stage.b[netHeaderSize:], p[:min(len(p), netInline)])
	var err error
	if first == len(p) {
		err = s.transfer(ctx, deadline, s.stage.region(0, netHeaderSize+first), s.stage.m)
	} else {
		err = s.sendLong(ctx, deadline, p, first)
	}
	if err != nil {
		s.err = err
	}
	return err
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
// message (waiting at most 200 ms); if the stream is already broken it
// closes the connection instead. Later Sends return err.
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
		_ = s.sc.Close()
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
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if s.transfer(ctx, time.Now().Add(200*time.Millisecond), s.stage.region(0, n), s.stage.m) != nil {
		_ = s.sc.Close()
	}
}

// Recv is not supported on the sending direction.
func (s *netSend) Recv(context.Context, func(Desc, int) error, func([]byte) error) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Recv on the sending direction of a network connection")
}

// Close closes the SendComm (interrupting a Send in progress, which then
// returns) and frees the staging buffer. Safe twice.
func (s *netSend) Close() error {
	err := s.sc.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.stage.free(s.sc)
	return err
}
