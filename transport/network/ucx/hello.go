package ucx

import (
	"crypto/subtle"
	"encoding/binary"
	"io"
	"net"
	"net/netip"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/auth"
	"github.com/gccl/gccl/transport/network"
)

// The handle: a magic, a version and the listener's TCP address.
const (
	handleMagic   = "GCUX"
	handleVersion = 1
)

func encodeHandle(ap netip.AddrPort) network.Handle {
	b, _ := ap.MarshalBinary() // never fails
	return append(append([]byte(handleMagic), handleVersion), b...)
}

func decodeHandle(h network.Handle) (netip.AddrPort, error) {
	var ap netip.AddrPort
	if len(h) < 5 || len(h) > network.MaxHandleSize || string(h[:4]) != handleMagic {
		return ap, gccl.Errorf(gccl.InvalidArgument, "handle", "not a ucx provider handle (%d bytes)", len(h))
	}
	if h[4] != handleVersion {
		return ap, gccl.Errorf(gccl.InvalidArgument, "handle", "ucx handle version %d, want %d: mixed gccl versions", h[4], handleVersion)
	}
	if err := ap.UnmarshalBinary(h[5:]); err != nil || !ap.IsValid() {
		return ap, gccl.Errorf(gccl.InvalidArgument, "handle", "bad address in ucx handle")
	}
	return ap, nil
}

// The handshake on the side TCP connection, before any UCX endpoint
// exists: the listener sends a challenge; the dialer a hello (the
// communicator, its rank and channel, its nonce and its proof of the
// secret, internal/auth); the listener checks it and answers with ackOK,
// its own proof over the hello and its worker address, and the worker
// address; or ackRejected. Nothing of a peer is kept, and no worker
// exists, before its proof checks.
const (
	helloMagic     = 0x58554347 // "GCUX"
	helloVersion   = 1
	helloFields    = 4 + 2 + 16 + auth.NonceSize + 4 + 4
	helloSize      = helloFields + auth.MACSize
	maxRank        = 1 << 24
	maxChannel     = 1 << 16
	maxWorkerAddr  = 1 << 14 // bytes of a worker address we accept
	ackOK          = 'K'
	ackRejected    = 'R'
	msgBye         = 'B' // sender to receiver: closing after this many sends
	msgFail        = 'F' // receiver to sender: a refusal (code, message)
	msgAck         = 'A' // receiver to sender: bye seen, worker flushed
	msgClosing     = 'C' // receiver to sender: closing, close your endpoint
	msgClosingAck  = 'c' // sender to receiver: endpoint closed, worker flushed
	msgWired       = 'W' // sender to receiver: endpoint wired up
	msgWiredAck    = 'w' // receiver to sender: worker flushed too
	maxFailMsg     = 1024
	offHelloFields = 6 + 16 + auth.NonceSize
)

type hello struct {
	comm  [16]byte
	nonce auth.Nonce
	peer  network.Peer
	mac   auth.MAC
}

func (h hello) marshal() []byte {
	b := make([]byte, helloSize)
	le := binary.LittleEndian
	le.PutUint32(b, helloMagic)
	le.PutUint16(b[4:], helloVersion)
	copy(b[6:], h.comm[:])
	copy(b[22:], h.nonce[:])
	le.PutUint32(b[offHelloFields:], uint32(h.peer.Rank))
	le.PutUint32(b[offHelloFields+4:], uint32(h.peer.Channel))
	copy(b[helloFields:], h.mac[:])
	return b
}

func parseHello(b []byte) (hello, error) {
	le := binary.LittleEndian
	if len(b) != helloSize || le.Uint32(b) != helloMagic || le.Uint16(b[4:]) != helloVersion {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "not a gccl ucx hello of this version")
	}
	var h hello
	copy(h.comm[:], b[6:])
	copy(h.nonce[:], b[22:])
	h.peer = network.Peer{Rank: int(le.Uint32(b[offHelloFields:])), Channel: int(le.Uint32(b[offHelloFields+4:]))}
	copy(h.mac[:], b[helloFields:])
	if h.peer.Rank >= maxRank || h.peer.Channel >= maxChannel {
		return hello{}, gccl.Errorf(gccl.RemoteError, "hello", "rank %d or channel %d out of range", h.peer.Rank, h.peer.Channel)
	}
	return h, nil
}

func (h *hello) sign(cfg network.Config, challenge auth.Nonce) {
	h.comm, h.nonce = cfg.CommID, auth.NewNonce()
	h.mac = auth.Prove(cfg.Secret[:], auth.Dialer, h.marshal()[:helloFields], challenge, h.nonce)
}

func (h hello) verify(cfg network.Config, challenge auth.Nonce) bool {
	same := subtle.ConstantTimeCompare(h.comm[:], cfg.CommID[:]) == 1
	return auth.Check(h.mac, cfg.Secret[:], auth.Dialer, h.marshal()[:helloFields], challenge, h.nonce) && same
}

// ackContext is what the listener's proof covers: the hello and the
// worker address it gives.
func ackContext(h hello, addr []byte) []byte {
	return append(h.marshal()[:helloFields], addr...)
}

func writeAck(c net.Conn, cfg network.Config, h hello, challenge auth.Nonce, addr []byte) error {
	mac := auth.Prove(cfg.Secret[:], auth.Listener, ackContext(h, addr), challenge, h.nonce)
	b := append([]byte{ackOK}, mac[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(addr)))
	_, err := c.Write(append(b, addr...))
	return err
}

// readAck reads the listener's answer to h and returns its worker address.
func readAck(c net.Conn, cfg network.Config, h hello, challenge auth.Nonce) ([]byte, error) {
	var b [1 + auth.MACSize + 4]byte
	if _, err := io.ReadFull(c, b[:1]); err != nil {
		return nil, gccl.Errorf(gccl.RemoteError, "ucx connect", "the listener closed the handshake (wrong secret or communicator?): %w", err)
	}
	if b[0] == ackRejected {
		return nil, gccl.Errorf(gccl.RemoteError, "ucx connect", "the listener rejected the connection of rank %d channel %d", h.peer.Rank, h.peer.Channel)
	}
	if b[0] != ackOK {
		return nil, gccl.Errorf(gccl.RemoteError, "ucx connect", "bad handshake answer %#x", b[0])
	}
	if _, err := io.ReadFull(c, b[1:]); err != nil {
		return nil, gccl.Errorf(gccl.RemoteError, "ucx connect", "reading the listener's answer: %w", err)
	}
	n := binary.LittleEndian.Uint32(b[1+auth.MACSize:])
	if n == 0 || n > maxWorkerAddr {
		return nil, gccl.Errorf(gccl.RemoteError, "ucx connect", "worker address of %d bytes", n)
	}
	addr := make([]byte, n)
	if _, err := io.ReadFull(c, addr); err != nil {
		return nil, gccl.Errorf(gccl.RemoteError, "ucx connect", "reading the listener's worker address: %w", err)
	}
	var mac auth.MAC
	copy(mac[:], b[1:])
	if !auth.Check(mac, cfg.Secret[:], auth.Listener, ackContext(h, addr), challenge, h.nonce) {
		return nil, gccl.Errorf(gccl.RemoteError, "ucx connect", "the listener could not prove the communicator's secret")
	}
	return addr, nil
}
