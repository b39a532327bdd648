package transport

import (
	"context"
	"encoding/binary"
	"runtime"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/transport/network"
)

// A message on a network connection is one transfer, or more for a
// message longer than netInline. The first carries the header (magic,
// flags, the message's length, a failure's code, a reserved zero word, the
// descriptor) and the message's first min(length, netInline) bytes; the
// others carry the rest, a chunk each.
const (
	netMagic      = 0x324d4347 // "GCM2"
	netHeaderSize = 24 + DescSize
	netFlagFail   = 1 // a failure record: the bytes are the error's message
	// netInline is the most bytes of a message the first transfer carries,
	// copied into the staging buffer with the header (one transfer, which
	// the socket provider sends inline on its control socket).
	netInline = 64 << 10
	// netDepth is how many transfers of a connection are in flight: the
	// receiving side keeps this many slots posted.
	netDepth = 4
	// DefaultNetChunkSize is the bytes of a transfer after the first when
	// Config.NetChunkSize is 0 (it must be the same on every rank);
	// MaxNetChunkSize bounds it.
	DefaultNetChunkSize = 512 << 10
	MaxNetChunkSize     = 16 << 20
	maxNetFailMsg       = 1024
)

type netHeader struct {
	flags  uint32
	length uint64
	code   uint32
	desc   Desc
}

func (h netHeader) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], netMagic)
	le.PutUint32(b[4:], h.flags)
	le.PutUint64(b[8:], h.length)
	le.PutUint32(b[16:], h.code)
	le.PutUint32(b[20:], 0)
	copy(b[24:], h.desc[:])
}

// parseNetHeader checks a message's first transfer, b.
func parseNetHeader(b []byte) (netHeader, error) {
	bad := func(why string) (netHeader, error) {
		return netHeader{}, gccl.Errorf(gccl.RemoteError, "net recv", "malformed message header (%s): the peer is not a gccl of this version, or the stream is corrupted", why)
	}
	le := binary.LittleEndian
	if len(b) < netHeaderSize || le.Uint32(b) != netMagic || le.Uint32(b[20:]) != 0 {
		return bad("magic")
	}
	h := netHeader{flags: le.Uint32(b[4:]), length: le.Uint64(b[8:]), code: le.Uint32(b[16:]), desc: Desc(b[24:netHeaderSize])}
	rest := uint64(len(b) - netHeaderSize)
	switch {
	case h.flags == netFlagFail:
		if rest != h.length || rest > maxNetFailMsg {
			return bad("failure record")
		}
	case h.flags != 0:
		return bad("flags")
	case h.length > maxMessage:
		return bad("length")
	case rest != min(h.length, netInline):
		return bad("first transfer's length")
	}
	return h, nil
}

// maxMessage bounds a message's length.
const maxMessage = 1 << 50

// staging is a connection's buffer: Go memory pinned for its life and
// registered with the connection once.
type staging struct {
	b   []byte
	pin runtime.Pinner
	m   network.MemHandle
}

func newStaging(c network.Comm, n int) (*staging, error) {
	s := &staging{b: make([]byte, n)}
	s.pin.Pin(&s.b[0])
	m, err := c.Register(network.HostRegion(s.b))
	if err != nil {
		s.pin.Unpin()
		return nil, err
	}
	s.m = m
	return s, nil
}

func (s *staging) region(off, n int) network.Region { return network.HostRegion(s.b).Slice(off, n) }

func (s *staging) free(c network.Comm) {
	if s != nil {
		_ = c.Deregister(s.m)
		s.pin.Unpin()
	}
}

// post posts a transfer, retrying while the provider has no room, until
// the deadline.
func post(ctx context.Context, deadline time.Time, what string, f func() (network.Request, error)) (network.Request, error) {
	p := wait.Poller{Ctx: ctx, Deadline: deadline, What: what}
	for {
		q, err := f()
		if err != nil || q != nil {
			return q, err
		}
		if err := p.Pause(); err != nil {
			return nil, err
		}
	}
}

// finish waits for q: Wait where the provider has it, else Test polled.
func finish(ctx context.Context, deadline time.Time, what string, q network.Request) (int, error) {
	if w, ok := q.(network.Waiter); ok {
		return w.Wait(ctx)
	}
	p := wait.Poller{Ctx: ctx, Deadline: deadline, What: what}
	for {
		done, n, err := q.Test()
		if done || err != nil {
			return n, err
		}
		if err := p.Pause(); err != nil {
			return 0, err
		}
	}
}
