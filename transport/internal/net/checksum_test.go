package net

import (
	"io"
	"math/rand/v2"
	gonet "net"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/nettest"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// TestChecksumOnTheWire reads a sender's frames off its sockets: with
// Options.Checksum the header of every payload (inline and piece) carries
// flagCRC and the payload's CRC32C, without it none does: the payload is
// not checksummed at all.
func TestChecksumOnTheWire(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sum := range []bool{false, true} {
		out, in := nettest.TCPPairs(t, 2)
		s, err := NewSendComm(out, Options{Timeout: 5 * time.Second, Checksum: sum})
		require.NoError(t, err)
		small, large := nettest.RandBytes(rng, 1000), nettest.RandBytes(rng, MaxInline+1)
		for i, b := range [][]byte{small, large} {
			postOn(t, s, b, func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, uint32(i)) })
		}
		// The control socket: the inline transfer with its bytes, then the
		// large one's header; the data socket: the large one's piece.
		for _, f := range []struct {
			sock    gonet.Conn
			seq     uint64
			flags   uint32
			payload []byte
		}{{in[0], 0, flagXfer, small}, {in[0], 1, flagXfer, nil}, {in[1], 0, flagPiece, large}} {
			h, got := readFrame(t, f.sock, f.seq)
			require.Equal(t, f.flags, h.flags)
			require.Equal(t, f.payload, got)
			require.Equal(t, sum && f.payload != nil, h.sum, "checksum %v, frame %+v", sum, h)
			if h.sum {
				require.Equal(t, crc32c(f.payload), h.crc)
			}
		}
		s.Close()
	}
}

// readFrame reads frame seq off c: its header and payload (nil if none).
func readFrame(t *testing.T, c gonet.Conn, seq uint64) (header, []byte) {
	t.Helper()
	var b [HeaderSize]byte
	_, err := io.ReadFull(c, b[:])
	require.NoError(t, err)
	h, err := parseHeader(b[:], seq)
	require.NoError(t, err)
	if h.length == 0 {
		return h, nil
	}
	p := make([]byte, h.length)
	_, err = io.ReadFull(c, p)
	require.NoError(t, err)
	return h, p
}

// TestChecksumRequiredWhereOn: a receiver with Options.Checksum refuses a
// payload its sender did not checksum, inline or in pieces, with an
// ErrInvalidUsage naming the setting; a sender's checksum is verified
// whatever the receiver's setting (see also transport/fault).
func TestChecksumRequiredWhereOn(t *testing.T) {
	for _, n := range []int{10, MaxInline + 1} {
		for _, c := range []struct{ send, recv, ok bool }{{false, true, false}, {true, false, true}, {true, true, true}, {false, false, true}} {
			out, in := nettest.TCPPairs(t, 2)
			s, err := NewSendComm(out, Options{Timeout: 5 * time.Second, Checksum: c.send})
			require.NoError(t, err)
			r, err := NewRecvComm(in, Options{Timeout: 5 * time.Second, Checksum: c.recv})
			require.NoError(t, err)
			rq := postOn(t, r, make([]byte, n), func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 0) })
			postOn(t, s, make([]byte, n), func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, 0) })
			got, err := waitFor(t, rq)
			if c.ok {
				require.NoError(t, err, "%d bytes, %+v", n, c)
				require.Equal(t, n, got)
			} else {
				require.ErrorIs(t, err, gccl.ErrInvalidUsage, "%d bytes, %+v", n, c)
				require.Contains(t, err.Error(), "GCCL_SOCKET_CHECKSUM")
			}
			s.Close()
			r.Close()
		}
	}
}
