package net

import (
	"bytes"
	"context"
	"math/rand/v2"
	gonet "net"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/nettest"
	"github.com/gccl/gccl/transport/internal/msg"
	"github.com/stretchr/testify/require"
)

func pair(t testing.TB, nsocks, chunk int) (*Sender, *Receiver) {
	out, in := nettest.TCPPairs(t, nsocks)
	s, err := NewSender(out, Options{ChunkSize: chunk})
	require.NoError(t, err)
	r, err := NewReceiver(in, Options{ChunkSize: chunk})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); r.Close() })
	return s, r
}

func TestStreamOverSockets(t *testing.T) {
	for _, nsocks := range []int{1, 3} {
		s, r := pair(t, nsocks, 1000)
		rng := rand.New(rand.NewPCG(uint64(nsocks), 1))
		var want []byte
		var msgs [][]byte
		for _, n := range []int{0, 1, 999, 1000, 1001, 2999, 3000, 12345, 1 << 20} {
			m := nettest.RandBytes(rng, n)
			msgs, want = append(msgs, m), append(want, m...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		errc := make(chan error, 1)
		go func() {
			for i, m := range msgs {
				if err := s.Send(ctx, descOf(i), m); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		got := make([]byte, 0, len(want))
		for i, m := range msgs {
			require.NoError(t, r.Recv(ctx, func(d msg.Desc, n int) error {
				require.Equal(t, descOf(i), d)
				require.Equal(t, len(m), n)
				return nil
			}, func(p []byte) error { got = append(got, p...); return nil }))
		}
		require.NoError(t, <-errc)
		require.True(t, bytes.Equal(want, got), "stream over %d sockets differs", nsocks)
		cancel()
	}
}

func TestRecvDeadlineKeepsStream(t *testing.T) {
	s, r := pair(t, 2, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, r.Recv(ctx, msg.Expect(1), func([]byte) error { return nil }), gccl.ErrTimeout)
	payload := nettest.RandBytes(rand.New(rand.NewPCG(2, 2)), 300)
	require.NoError(t, s.Send(context.Background(), d0, payload))
	var got []byte
	require.NoError(t, r.Recv(context.Background(), msg.Expect(300), func(p []byte) error { got = append(got, p...); return nil }))
	require.Equal(t, payload, got)
}

func TestSendDeadline(t *testing.T) {
	s, _ := pair(t, 1, MaxChunkSize)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// Nobody reads: the socket buffers fill and the write must hit the deadline.
	err := s.Send(ctx, d0, make([]byte, 64<<20))
	require.ErrorIs(t, err, gccl.ErrTimeout)
	require.ErrorIs(t, s.Send(context.Background(), d0, []byte{1}), gccl.ErrTimeout, "a broken stream stays broken")
}

func TestPeerCloseAndTruncation(t *testing.T) {
	s, r := pair(t, 1, 64)
	require.NoError(t, s.Send(context.Background(), d0, []byte("abc")))
	require.NoError(t, s.Close())
	var got []byte
	require.NoError(t, r.Recv(context.Background(), msg.Expect(3), func(p []byte) error { got = append(got, p...); return nil }))
	require.Equal(t, "abc", string(got))
	require.ErrorIs(t, r.Recv(context.Background(), msg.Expect(1), func([]byte) error { return nil }), gccl.ErrRemote)

	// Half a frame, then close.
	out, in := nettest.TCPPairs(t, 1)
	r2, err := NewReceiver(in, Options{})
	require.NoError(t, err)
	defer r2.Close()
	var hdr [HeaderSize]byte
	header{length: 100, seq: 0, crc: crc32c(make([]byte, 100)), flags: flagFirst, msgLen: 100}.put(hdr[:])
	_, err = out[0].Write(append(hdr[:], make([]byte, 40)...))
	require.NoError(t, err)
	out[0].Close()
	err = r2.Recv(context.Background(), msg.Expect(100), func([]byte) error { t.Error("truncated data delivered"); return nil })
	require.ErrorIs(t, err, gccl.ErrRemote)
	require.Contains(t, err.Error(), "truncated")
}

func TestCloseUnblocksAndRejects(t *testing.T) {
	s, r := pair(t, 2, 64)
	errc := make(chan error, 1)
	go func() { errc <- r.Recv(context.Background(), msg.Expect(1), func([]byte) error { return nil }) }()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, r.Close())
	require.ErrorIs(t, <-errc, gccl.ErrInvalidUsage)
	require.NoError(t, r.Close())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Send(context.Background(), d0, []byte{1}), gccl.ErrInvalidUsage)
	_, err := NewSender(nil, Options{})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, err = NewReceiver(nil, Options{ChunkSize: -1})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

func TestHeaderRoundTripAndRejects(t *testing.T) {
	var b [HeaderSize]byte
	h := header{length: 777, seq: 1<<40 + 5, crc: 0xdeadbeef, flags: flagFirst, msgLen: 1000, desc: descOf(3)}
	h.put(b[:])
	got, err := parseHeader(b[:], h.seq)
	require.NoError(t, err)
	require.Equal(t, h, got)
	_, err = parseHeader(b[:], h.seq+1)
	require.ErrorIs(t, err, gccl.ErrRemote)
	for i := range 8 * HeaderSize {
		c := b
		c[i/8] ^= 1 << (i % 8)
		_, err := parseHeader(c[:], h.seq)
		require.ErrorIs(t, err, gccl.ErrRemote, "bit %d flipped went unnoticed", i)
	}
	for _, bad := range []header{{length: 0}, {length: MaxChunkSize + 1}, {length: 10, flags: flagFirst, msgLen: 9},
		{length: maxFailMsg + 1, flags: flagFail}, {length: 1, flags: 4}, {length: 1, flags: flagFirst | flagFail, msgLen: 1}} {
		bad.put(b[:])
		_, err = parseHeader(b[:], 0)
		require.ErrorIs(t, err, gccl.ErrRemote, "%+v", bad)
	}
}

func FuzzParseHeader(f *testing.F) {
	var b [HeaderSize]byte
	header{length: 10, seq: 3, crc: 1}.put(b[:])
	f.Add(b[:], uint64(3))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, seq uint64) {
		h, err := parseHeader(data, seq)
		if err != nil {
			require.Equal(t, gccl.RemoteError, gccl.Code(err))
			return
		}
		require.True(t, h.length >= 0 && h.length <= MaxChunkSize && (h.length > 0 || h.flags != 0))
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

// FuzzReceiver feeds arbitrary bytes to a receiver: it must deliver nothing
// that is not a well-formed, checksummed frame, and must not hang or panic.
func FuzzReceiver(f *testing.F) {
	var good bytes.Buffer
	var b [HeaderSize]byte
	payload := []byte("payload!")
	header{length: len(payload), seq: 0, crc: crc32c(payload), flags: flagFirst, msgLen: uint64(len(payload))}.put(b[:])
	good.Write(b[:])
	good.Write(payload)
	f.Add(good.Bytes())
	f.Add(good.Bytes()[:30])
	f.Fuzz(func(t *testing.T, data []byte) {
		out, in := gonet.Pipe()
		r, err := NewReceiver([]gonet.Conn{in}, Options{})
		require.NoError(t, err)
		defer r.Close()
		go func() { out.Write(data); out.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for {
			var got []byte
			n := 0
			err := r.Recv(ctx, func(_ msg.Desc, m int) error { n = m; return nil },
				func(p []byte) error { got = append(got, p...); return nil })
			if err != nil {
				require.NotEqual(t, gccl.Success, gccl.Code(err), "unexpected %v", err)
				return
			}
			require.Len(t, got, n)
		}
	})
}

var d0 msg.Desc

// descOf is a descriptor telling message i apart.
func descOf(i int) (d msg.Desc) {
	for k := range d {
		d[k] = byte(i + k)
	}
	return d
}

// TestRefusedMessage: a receiver that refuses a message and Fails tells
// the sender over the back channel: its next Send fails with the error.
// A sender that Fails makes the receiver's Recv fail with its error.
func TestRefusedMessage(t *testing.T) {
	s, r := pair(t, 2, 64)
	ctx := context.Background()
	require.NoError(t, s.Send(ctx, descOf(1), make([]byte, 100)))
	err := r.Recv(ctx, msg.Expect(50), func([]byte) error { t.Fatal("a refused message must not be consumed"); return nil })
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	r.Fail(err)
	require.Eventually(t, func() bool { return s.Refusal() != nil }, 5*time.Second, time.Millisecond)
	err = s.Send(ctx, descOf(2), []byte{1})
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.Contains(t, err.Error(), "want 50")

	s2, r2 := pair(t, 3, 64)
	require.NoError(t, s2.Send(ctx, descOf(1), make([]byte, 200)))
	s2.Fail(gccl.Errorf(gccl.RemoteError, "op", "rank 3 failed"))
	require.NoError(t, r2.Recv(ctx, msg.Expect(200), func([]byte) error { return nil }))
	err = r2.Recv(ctx, msg.Expect(1), func([]byte) error { return nil })
	require.ErrorIs(t, err, gccl.ErrRemote)
	require.Contains(t, err.Error(), "rank 3 failed")
}
