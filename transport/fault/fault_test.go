package fault

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	gonet "net"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/nettest"
	"github.com/gccl/gccl/transport"
	"github.com/gccl/gccl/transport/internal/shm"
	"github.com/stretchr/testify/require"
)

// TestCRCDetectsCorruptionBelowFraming flips bits and drops writes on the
// sockets under transport/internal/net, payload checksums on: every fault
// must be reported as ErrSystem or ErrRemote, and every byte delivered
// before it must be the byte sent.
func TestCRCDetectsCorruptionBelowFraming(t *testing.T) {
	detected := 0
	for seed := range uint64(12) {
		cfg := Config{Seed: seed, Corrupt: 0.05}
		if seed%3 == 2 {
			cfg = Config{Seed: seed, Drop: 0.05}
		}
		out, in := nettest.TCPPairs(t, 2)
		wrapped := make([]*NetConn, len(out))
		for i, c := range out {
			wrapped[i] = WrapNet(c, cfg)
			out[i] = wrapped[i]
		}
		st := NewStream(t, out, in, true)
		rng := rand.New(rand.NewPCG(seed, 1))
		var err error
		for i := range 20 {
			want := nettest.RandBytes(rng, 1+rng.IntN(300000))
			go func() { _ = st.Send(context.Background(), want, uint32(i)) }()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			var got []byte
			got, err = st.Recv(ctx, len(want), uint32(i))
			cancel()
			if err != nil {
				break
			}
			require.True(t, bytes.Equal(got, want), "seed %d: corrupted bytes were delivered", seed)
		}
		injected := wrapped[0].Stats().Corruptions + wrapped[1].Stats().Corruptions +
			wrapped[0].Stats().Drops + wrapped[1].Stats().Drops
		if injected > 0 {
			require.Error(t, err, "seed %d: %d faults injected, none reported", seed, injected)
			c := gccl.Code(err)
			// A dropped write can also starve the receiver: that ends in a timeout, never in data.
			require.True(t, c == gccl.SystemError || c == gccl.RemoteError || c == gccl.TimeoutError, "seed %d: %v", seed, err)
			if c != gccl.TimeoutError {
				detected++
			}
		} else {
			require.NoError(t, err)
		}
		st.Close()
	}
	require.Positive(t, detected, "no seed exercised the checksum")
}

// TestPayloadCorruptionIsSystemError: with payload checksums on, a bit
// flipped in a payload fails its receive.
func TestPayloadCorruptionIsSystemError(t *testing.T) {
	_, err := sendFlipped(t, 2, true)
	require.ErrorIs(t, err, gccl.ErrSystem, "a corrupted payload must fail its receive")
}

// TestHeaderCorruptionWithoutChecksum: with payload checksums off (the
// default), a bit flipped in a frame header still fails the receive
// (ErrRemote: the header's own CRC32C), while one flipped in a payload is
// delivered: past TCP's checksum, that is what the setting trades.
func TestHeaderCorruptionWithoutChecksum(t *testing.T) {
	_, err := sendFlipped(t, 1, false)
	require.ErrorIs(t, err, gccl.ErrRemote, "a corrupted header must fail its receive")
	got, err := sendFlipped(t, 2, false)
	require.NoError(t, err)
	require.NotEqual(t, flipMe, got, "the payload was checked although checksums are off")
}

var flipMe = []byte("some payload, long enough to flip a byte of it")

// sendFlipped sends flipMe with a bit flipped in the n-th write of the
// control socket (a wrapped socket has no fast path: the control writer
// writes header and payload one after the other) and receives it.
func sendFlipped(t *testing.T, n int, checksum bool) ([]byte, error) {
	out, in := nettest.TCPPairs(t, 2)
	st := NewStream(t, []gonet.Conn{&flipNth{Conn: out[0], n: n}, out[1]}, in, checksum)
	require.NoError(t, st.Send(context.Background(), flipMe, 0))
	got, err := st.Recv(context.Background(), len(flipMe), 0) // the bytes are in the buffer either way
	return got, err
}

// flipNth flips a bit in the n-th Write.
type flipNth struct {
	gonet.Conn
	n, seen int
}

func (f *flipNth) Write(p []byte) (int, error) {
	f.seen++
	if f.seen == f.n {
		p = append([]byte(nil), p...)
		p[len(p)/2] ^= 0x10
	}
	return f.Conn.Write(p)
}

// shmPair is a connected SHM ring as transport.Conns.
func shmPair(t *testing.T) (transport.Conn, transport.Conn) {
	path := t.TempDir() + "/ring"
	s, err := shm.Create(path, shm.Options{SlotSize: 256, Slots: 4})
	require.NoError(t, err)
	r, err := shm.Open(context.Background(), path, shm.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); r.Close() })
	return s, r
}

func TestWrapFaultsAreSeededAndCounted(t *testing.T) {
	run := func(seed uint64) (Stats, [][]byte) {
		s, r := shmPair(t)
		fs := Wrap(s, Config{Seed: seed, Drop: 0.2, Corrupt: 0.2, Delay: 0.2, MaxDelay: 100 * time.Microsecond})
		rng := rand.New(rand.NewPCG(7, 7))
		var recv [][]byte
		for range 50 {
			m := nettest.RandBytes(rng, 1+rng.IntN(100))
			require.NoError(t, fs.Send(context.Background(), transport.Desc{}, m))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			var got []byte
			err := r.Recv(ctx, transport.Expect(len(m)), func(p []byte) error { got = append(got, p...); return nil })
			cancel()
			if err != nil {
				require.ErrorIs(t, err, gccl.ErrTimeout) // dropped
				recv = append(recv, nil)
				continue
			}
			recv = append(recv, got)
		}
		return fs.(*Conn).Stats(), recv
	}
	st1, r1 := run(42)
	st2, r2 := run(42)
	require.Equal(t, st1, st2, "same seed, same faults")
	require.Equal(t, r1, r2)
	require.Positive(t, st1.Drops)
	require.Positive(t, st1.Corruptions)
	require.Positive(t, st1.Delays)
	st3, _ := run(43)
	require.NotEqual(t, st1, st3)
}

func TestWrapRecvCorruptsAndCloses(t *testing.T) {
	s, r := shmPair(t)
	fr := Wrap(r, Config{Seed: 1, Corrupt: 1})
	msg := []byte("0123456789")
	require.NoError(t, s.Send(context.Background(), transport.Desc{}, msg))
	var got []byte
	require.NoError(t, fr.Recv(context.Background(), transport.Expect(len(msg)), func(p []byte) error { got = append(got, p...); return nil }))
	require.Len(t, got, len(msg))
	require.NotEqual(t, msg, got)
	require.Equal(t, "0123456789", string(msg), "the source must not be modified")

	fs := Wrap(s, Config{Seed: 1, Close: 1})
	require.ErrorIs(t, fs.Send(context.Background(), transport.Desc{}, msg), gccl.ErrRemote)
	err := r.Recv(context.Background(), transport.Expect(1), func([]byte) error { return nil })
	require.ErrorIs(t, err, gccl.ErrRemote)
	require.False(t, errors.Is(err, gccl.ErrTimeout))
}
