package net

import (
	"context"
	gonet "net"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

func TestHeaderRoundTripAndRejects(t *testing.T) {
	var b [HeaderSize]byte
	for _, h := range []header{
		{flags: flagXfer, sum: true, seq: 1<<40 + 5, length: 777, crc: 0xdeadbeef, total: 777, tag: 9},
		{flags: flagXfer, seq: 1<<40 + 6, length: 777, total: 777, tag: 9},
		{flags: flagXfer, seq: 2, total: 1 << 30, tag: 1, piece: MaxPiece},
		{flags: flagPiece, sum: true, seq: 3, length: MaxPiece, crc: 1},
		{flags: flagPiece, seq: 3, length: MaxPiece},
		{flags: flagFail, sum: true, seq: 0, length: 10, code: uint32(gccl.InvalidUsage)},
		{flags: flagBye, seq: 4},
	} {
		h.put(b[:])
		got, err := parseHeader(b[:], h.seq)
		require.NoError(t, err)
		require.Equal(t, h, got)
		_, err = parseHeader(b[:], h.seq+1)
		require.ErrorIs(t, err, gccl.ErrRemote, "wrong sequence number")
		for i := range 8 * HeaderSize {
			c := b
			c[i/8] ^= 1 << (i % 8)
			_, err := parseHeader(c[:], h.seq)
			require.ErrorIs(t, err, gccl.ErrRemote, "bit %d flipped went unnoticed", i)
		}
	}
	for _, bad := range []header{
		{flags: 0}, {flags: flagXfer | flagPiece}, {flags: 16}, {flags: flagBye, length: 1},
		{flags: flagXfer, length: 10, total: 9}, {flags: flagXfer, length: MaxInline + 1, total: MaxInline + 1},
		{flags: flagXfer, total: 100, piece: MaxPiece + 1}, {flags: flagXfer, length: 5, total: 100, piece: 10},
		{flags: flagXfer, total: 0, piece: 10},
		{flags: flagPiece}, {flags: flagPiece, length: MaxPiece + 1},
		{flags: flagFail, length: maxFailMsg + 1},
		{flags: flagXfer, length: 10, total: 10, crc: 5}, // a CRC without flagCRC
	} {
		bad.put(b[:])
		_, err := parseHeader(b[:], 0)
		require.ErrorIs(t, err, gccl.ErrRemote, "%+v", bad)
	}
}

func FuzzParseHeader(f *testing.F) {
	var b [HeaderSize]byte
	header{flags: flagXfer, length: 10, seq: 3, sum: true, crc: 1, total: 10}.put(b[:])
	f.Add(b[:], uint64(3))
	header{flags: flagPiece, length: 10, seq: 4}.put(b[:])
	f.Add(b[:], uint64(4))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, seq uint64) {
		h, err := parseHeader(data, seq)
		if err != nil {
			require.Equal(t, gccl.RemoteError, gccl.Code(err))
			return
		}
		require.True(t, h.length >= 0 && h.length <= MaxPiece && h.piece >= 0 && h.piece <= MaxPiece)
		require.Equal(t, seq, h.seq)
		var again [HeaderSize]byte
		h.put(again[:])
		require.Equal(t, data[:HeaderSize], again[:])
	})
}

func FuzzParseHello(f *testing.F) {
	f.Add(hello{rank: 3, channel: 1, index: 0, count: 2}.marshal())
	f.Add([]byte("GCH1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := parseHello(data)
		if err != nil {
			require.Equal(t, gccl.RemoteError, gccl.Code(err))
			return
		}
		require.True(t, h.rank < MaxRank && h.channel < MaxChannel && h.index < h.count && h.count <= MaxSockets)
		require.Equal(t, data, h.marshal())
	})
}

// FuzzRecvComm feeds arbitrary bytes to a receiver's control socket, with
// and without Options.Checksum: it must complete nothing that is not a
// well-formed transfer with the posted tag (and, with Checksum, a payload
// CRC that matches), and must neither hang nor panic.
func FuzzRecvComm(f *testing.F) {
	payload := []byte("payload!")
	for _, sum := range []bool{true, false} {
		good := make([]byte, HeaderSize, HeaderSize+len(payload))
		h := header{flags: flagXfer, total: uint64(len(payload)), tag: 7}
		h.setPayload(payload, sum)
		h.put(good)
		good = append(good, payload...)
		f.Add(good)
		f.Add(good[:30])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, sum := range []bool{false, true} {
			fuzzRecv(t, data, sum)
		}
	})
}

// fuzzRecv is one FuzzRecvComm run, with Options.Checksum set to sum.
func fuzzRecv(t *testing.T, data []byte, sum bool) {
	ctrlOut, ctrlIn := gonet.Pipe()
	dataOut, dataIn := gonet.Pipe()
	defer ctrlOut.Close()
	defer dataOut.Close()
	r, err := NewRecvComm([]gonet.Conn{ctrlIn, dataIn}, Options{Timeout: 2 * time.Second, Checksum: sum})
	require.NoError(t, err)
	defer r.Close()
	go func() { // a sender that writes data, then closes (all its sockets)
		_, _ = ctrlOut.Write(data)
		ctrlOut.Close()
		dataOut.Close()
	}()
	buf := make([]byte, 64)
	m, err := r.Register(network.HostRegion(buf))
	require.NoError(t, err)
	q, err := r.Irecv(network.HostRegion(buf), m, 7)
	if err != nil { // the stream already ended, malformed, before the receive was posted
		require.Equal(t, gccl.RemoteError, gccl.Code(err), "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := q.(network.Waiter).Wait(ctx)
	if err != nil {
		require.NotEqual(t, gccl.TimeoutError, gccl.Code(err), "a closed stream must end the receive")
		return
	}
	h, herr := parseHeader(data, 0)
	require.NoError(t, herr)
	require.Equal(t, data[HeaderSize:HeaderSize+n], buf[:n])
	require.Equal(t, uint32(7), h.tag)
	if sum {
		require.True(t, h.sum, "checksum on: a transfer without one completed")
		require.Equal(t, h.crc, crc32c(buf[:n]))
	}
}
