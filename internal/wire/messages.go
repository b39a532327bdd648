package wire

import (
	"encoding/binary"
	"io"

	"github.com/gccl/gccl"
)

// Field limits inside messages.
const (
	MaxAddr = 256  // bytes of one socket address ("ip:port")
	MaxText = 4096 // bytes of an error message or argument name
)

// Key identifies a communicator's rendezvous; Secret authenticates it.
type (
	Key    [16]byte
	Secret [16]byte
)

// Hello is a rank's request to join a rendezvous at the root, sent once
// the connection has authenticated (see Auth).
type Hello struct {
	Sub       uint8  // which rendezvous of the ID (0, or 1 for scalable slice leaders)
	NRanks    uint32 // participants of this rendezvous
	Rank      uint32 // this participant's index, < NRanks
	Base      uint32 // global rank of index 0, for error messages
	TimeoutMs uint64 // how long the rank waits; the root gives up a little earlier
	Relay     bool   // scalable init: after the peers, wait for a forwarded full list
	Addr      []byte // the rank's listen address, or a leader's encoded slice list
}

// Encode returns the payload of h.
func (h *Hello) Encode() []byte {
	e := &enc{}
	e.u8(h.Sub)
	e.u32(h.NRanks)
	e.u32(h.Rank)
	e.u32(h.Base)
	e.u64(h.TimeoutMs)
	e.boolean(h.Relay)
	e.bytes(h.Addr)
	return e.b
}

// DecodeHello parses a Hello payload.
func DecodeHello(b []byte) (Hello, error) {
	d := newDec("hello", b)
	h := Hello{Sub: d.u8(), NRanks: d.u32(), Rank: d.u32(),
		Base: d.u32(), TimeoutMs: d.u64(), Relay: d.boolean(), Addr: d.bytes(MaxPayload)}
	if d.err == nil && (h.NRanks == 0 || h.NRanks > MaxRanks || h.Rank >= h.NRanks) {
		d.fail("rank %d of %d is out of range", h.Rank, h.NRanks)
	}
	return h, d.done()
}

// Status is a result: Code 0 is success, anything else an error to report.
type Status struct {
	Code uint32 // a gccl.Result
	Arg  string
	Msg  string
}

// StatusOf turns err into a Status (nil is success).
func StatusOf(err error) Status {
	if err == nil {
		return Status{}
	}
	s := Status{Code: uint32(gccl.Code(err)), Msg: err.Error()}
	if e, ok := err.(*gccl.Error); ok {
		s.Arg, s.Msg = e.Arg, e.Msg
		if e.Err != nil && e.Msg == "" {
			s.Msg = e.Err.Error()
		}
	}
	return s
}

// Err turns s back into an error: nil for success, else a *gccl.Error.
func (s *Status) Err() error {
	if s.Code == 0 {
		return nil
	}
	return &gccl.Error{Code: gccl.Result(s.Code), Arg: s.Arg, Msg: s.Msg}
}

// Encode returns the payload of s.
func (s *Status) Encode() []byte {
	e := &enc{}
	e.u32(s.Code)
	e.bytes([]byte(s.Arg))
	e.bytes([]byte(s.Msg))
	return e.b
}

// DecodeStatus parses a Status payload.
func DecodeStatus(b []byte) (Status, error) {
	d := newDec("status", b)
	s := Status{Code: d.u32(), Arg: d.str(MaxText), Msg: d.str(MaxText)}
	return s, d.done()
}

// Peers is a list of addresses indexed by rank (TypePeers), or the full list
// a slice leader hands its root to relay (TypeForward).
type Peers struct {
	Addrs [][]byte
}

// Encode returns the payload of p.
func (p *Peers) Encode() []byte {
	e := &enc{}
	e.u32(uint32(len(p.Addrs)))
	for _, a := range p.Addrs {
		e.bytes(a)
	}
	return e.b
}

// DecodePeers parses a Peers payload; the addresses alias b.
func DecodePeers(b []byte) (Peers, error) {
	d := newDec("peers", b)
	n := d.count(MaxRanks, 4)
	p := Peers{Addrs: make([][]byte, n)}
	for i := range p.Addrs {
		p.Addrs[i] = d.view(MaxPayload)
	}
	return p, d.done()
}

// PeerHello opens a mesh connection from rank From to rank To, once the
// connection has authenticated (see Auth).
type PeerHello struct {
	NRanks uint32
	From   uint32
	To     uint32
}

// Encode returns the payload of h.
func (h *PeerHello) Encode() []byte {
	e := &enc{}
	e.u32(h.NRanks)
	e.u32(h.From)
	e.u32(h.To)
	return e.b
}

// DecodePeerHello parses a PeerHello payload.
func DecodePeerHello(b []byte) (PeerHello, error) {
	d := newDec("peer-hello", b)
	h := PeerHello{NRanks: d.u32(), From: d.u32(), To: d.u32()}
	if d.err == nil && (h.NRanks > MaxRanks || h.From >= h.NRanks || h.To >= h.NRanks) {
		d.fail("ranks %d→%d of %d are out of range", h.From, h.To, h.NRanks)
	}
	return h, d.done()
}

// Data is one tagged message between ranks. Internal messages belong to the
// bootstrap's own collectives and never match a user's Recv.
type Data struct {
	Internal bool
	Tag      uint64
	Payload  []byte
}

// Encode returns the payload of m.
func (m *Data) Encode() []byte {
	e := &enc{b: make([]byte, 0, 13+len(m.Payload))}
	e.boolean(m.Internal)
	e.u64(m.Tag)
	e.bytes(m.Payload)
	return e.b
}

// WriteData writes m as one TypeData frame, in one writev on a net.Conn,
// without copying its payload.
func WriteData(w io.Writer, m *Data) error {
	var pre [13]byte
	pre[0] = 0
	if m.Internal {
		pre[0] = 1
	}
	binary.LittleEndian.PutUint64(pre[1:], m.Tag)
	binary.LittleEndian.PutUint32(pre[9:], uint32(len(m.Payload)))
	return writeFrame(w, TypeData, pre[:], m.Payload)
}

// DecodeData parses a Data payload; the message's Payload aliases b.
func DecodeData(b []byte) (Data, error) {
	d := newDec("data", b)
	m := Data{Internal: d.boolean(), Tag: d.u64(), Payload: d.view(MaxPayload)}
	return m, d.done()
}
