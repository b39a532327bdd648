package transport

import (
	"context"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/require"
)

// TestNetRefusedMessage: a receiver that refuses a message and Fails tells
// the sender, whose next Send fails with that error (and Refusal reports
// it); a sender that Fails makes the receiver's next Recv fail with its
// error, after the messages sent before it.
func TestNetRefusedMessage(t *testing.T) {
	w := newWorld(t, 2, modes[1], nil)
	links := w.connectAll(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, r := links[0][1][0].send, links[1][0][0].recv
	require.NoError(t, s.Send(ctx, Desc{1}, make([]byte, 100)))
	err := r.Recv(ctx, Expect(50), func([]byte) error { t.Fatal("a refused message must not be consumed"); return nil })
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	r.Fail(err)
	require.Eventually(t, func() bool { return s.(Refuser).Refusal() != nil }, 5*time.Second, time.Millisecond)
	err = s.Send(ctx, Desc{2}, []byte{1})
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.Contains(t, err.Error(), "want 50")

	s2, r2 := links[1][0][0].send, links[0][1][0].recv
	require.NoError(t, s2.Send(ctx, Desc{1}, make([]byte, 200000)))
	s2.Fail(gccl.Errorf(gccl.RemoteError, "op", "rank 1 failed"))
	require.NoError(t, r2.Recv(ctx, Expect(200000), func([]byte) error { return nil }))
	err = r2.Recv(ctx, Expect(1), func([]byte) error { return nil })
	require.ErrorIs(t, err, gccl.ErrRemote)
	require.Contains(t, err.Error(), "rank 1 failed")
}

func TestNetHeaderRejects(t *testing.T) {
	b := make([]byte, netHeaderSize+10)
	netHeader{length: 10, desc: Desc{7}}.put(b)
	h, err := parseNetHeader(b)
	require.NoError(t, err)
	require.Equal(t, netHeader{length: 10, desc: Desc{7}}, h)
	for _, bad := range [][]byte{b[:netHeaderSize-1], b[:netHeaderSize+9], append(b, 0)} {
		_, err := parseNetHeader(bad)
		require.ErrorIs(t, err, gccl.ErrRemote, "%d bytes", len(bad))
	}
	for _, h := range []netHeader{{flags: 2}, {flags: netFlagFail, length: 11}, {length: maxMessage + 1}, {length: netInline + 1}} {
		h.put(b)
		_, err := parseNetHeader(b)
		require.ErrorIs(t, err, gccl.ErrRemote, "%+v", h)
	}
}

func FuzzNetHeader(f *testing.F) {
	b := make([]byte, netHeaderSize+3)
	netHeader{length: 3}.put(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := parseNetHeader(data)
		if err != nil {
			require.ErrorIs(t, err, gccl.ErrRemote)
			return
		}
		require.LessOrEqual(t, len(data)-netHeaderSize, netInline)
		require.LessOrEqual(t, uint64(len(data)-netHeaderSize), h.length)
	})
}
