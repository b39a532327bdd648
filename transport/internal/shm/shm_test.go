package shm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/internal/msg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pair creates a ring in a fresh directory and opens both of its ends.
func pair(t *testing.T, o Options) (*Sender, *Receiver, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ring")
	s, err := Create(path, o)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := Open(ctx, path, o)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); r.Close() })
	return s, r, path
}

var d0 msg.Desc

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// descOf is a descriptor telling message i apart.
func descOf(i int) (d msg.Desc) {
	for k := range d {
		d[k] = byte(i + k)
	}
	return d
}

// collect receives the messages, checking each descriptor and length.
func collect(ctx context.Context, r *Receiver, sizes []int) ([]byte, error) {
	var out []byte
	for i, n := range sizes {
		err := r.Recv(ctx, func(d msg.Desc, got int) error {
			if d != descOf(i) || got != n {
				return fmt.Errorf("message %d: descriptor %v, %d bytes; want %v, %d", i, d, got, descOf(i), n)
			}
			return nil
		}, func(p []byte) error { out = append(out, p...); return nil })
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func TestRoundTripManySizes(t *testing.T) {
	s, r, _ := pair(t, Options{SlotSize: 4096, Slots: 4})
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 3, 63, 64, 65, 4095, 4096, 4097, 3*4096 + 7, 1 << 20, 5<<20 + 13}
	var want []byte
	msgs := make([][]byte, len(sizes))
	for i, n := range sizes {
		msgs[i] = randBytes(rng, n)
		want = append(want, msgs[i]...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for i, m := range msgs {
			if err := s.Send(ctx, descOf(i), m); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	got, err := collect(ctx, r, sizes)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.True(t, bytes.Equal(want, got), "received bytes differ from sent bytes")
}

func TestPiecesPointIntoSlots(t *testing.T) {
	s, r, _ := pair(t, Options{SlotSize: 64, Slots: 2})
	ctx := context.Background()
	require.NoError(t, s.Send(ctx, d0, bytes.Repeat([]byte{7}, 64)))
	require.NoError(t, r.Recv(ctx, msg.Expect(64), func(p []byte) error {
		_, slot := r.r.slot(0)
		assert.Equal(t, &slot[0], &p[0], "piece must alias the shared slot, not a copy")
		return nil
	}))
}

func TestDeadlines(t *testing.T) {
	s, r, _ := pair(t, Options{SlotSize: 64, Slots: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := r.Recv(ctx, msg.Expect(1), func([]byte) error { return nil })
	require.ErrorIs(t, err, gccl.ErrTimeout)
	// Fill the ring, then one more byte must time out.
	require.NoError(t, s.Send(context.Background(), d0, make([]byte, 128)))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	require.ErrorIs(t, s.Send(ctx2, d0, []byte{1}), gccl.ErrTimeout)
	assert.Less(t, time.Since(start), 2*time.Second)
	// Default timeout applies without a ctx deadline.
	s2, r2, _ := pair(t, Options{Timeout: 20 * time.Millisecond})
	require.ErrorIs(t, r2.Recv(context.Background(), msg.Expect(1), func([]byte) error { return nil }), gccl.ErrTimeout)
	_ = s2
}

func TestPeerCloseGivesRemote(t *testing.T) {
	s, r, _ := pair(t, Options{SlotSize: 64, Slots: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	payload := randBytes(rand.New(rand.NewPCG(5, 6)), 100)
	require.NoError(t, s.Send(ctx, d0, payload))
	require.NoError(t, s.Close())
	// Bytes sent before the close still arrive; then the close is reported.
	var got []byte
	require.NoError(t, r.Recv(ctx, msg.Expect(100), func(p []byte) error { got = append(got, p...); return nil }))
	require.Equal(t, payload, got)
	require.ErrorIs(t, r.Recv(ctx, msg.Expect(1), func([]byte) error { return nil }), gccl.ErrRemote)

	s2, r2, _ := pair(t, Options{SlotSize: 64, Slots: 1})
	require.NoError(t, s2.Send(ctx, d0, make([]byte, 64)))
	errc := make(chan error, 1)
	go func() { errc <- s2.Send(ctx, d0, make([]byte, 64)) }()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, r2.Close())
	require.ErrorIs(t, <-errc, gccl.ErrRemote)
}

func TestLocalCloseUnblocksAndRejects(t *testing.T) {
	s, r, _ := pair(t, Options{SlotSize: 64, Slots: 1})
	errc := make(chan error, 1)
	go func() { errc <- r.Recv(context.Background(), msg.Expect(1), func([]byte) error { return nil }) }()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, r.Close())
	require.ErrorIs(t, <-errc, gccl.ErrInvalidUsage)
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Recv(context.Background(), msg.Expect(1), nil), gccl.ErrInvalidUsage)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Send(context.Background(), d0, []byte{1}), gccl.ErrInvalidUsage)
	var nilS *Sender
	require.NoError(t, nilS.Close())
}

func TestConsumeErrorReturned(t *testing.T) {
	s, r, _ := pair(t, Options{})
	require.NoError(t, s.Send(context.Background(), d0, []byte("abc")))
	boom := errors.New("boom")
	require.ErrorIs(t, r.Recv(context.Background(), msg.Expect(3), func([]byte) error { return boom }), boom)
}

func TestFilesUnlinked(t *testing.T) {
	_, _, path := pair(t, Options{})
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "the consumer must unlink the ring once mapped")

	lone := filepath.Join(t.TempDir(), "lone")
	s, err := Create(lone, Options{})
	require.NoError(t, err)
	_, err = Create(lone, Options{})
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.NoError(t, s.Close())
	_, err = os.Stat(lone)
	require.ErrorIs(t, err, os.ErrNotExist, "the producer must unlink an unopened ring on Close")
}

func TestCorruptionDetected(t *testing.T) {
	s, r, _ := pair(t, Options{SlotSize: 64, Slots: 2})
	require.NoError(t, s.Send(context.Background(), d0, []byte{1, 2, 3}))
	hdr, _ := s.r.slot(0)
	*slotLenWord(hdr) = 1 << 20 // a length beyond the slot
	require.ErrorIs(t, r.Recv(context.Background(), msg.Expect(3), func([]byte) error { return nil }), gccl.ErrRemote)
}

func TestOpenValidates(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := Open(ctx, filepath.Join(dir, "missing"), Options{})
	require.ErrorIs(t, err, gccl.ErrTimeout)

	bad := filepath.Join(dir, "bad")
	junk := randBytes(rand.New(rand.NewPCG(9, 9)), ringBytes(64, 2))
	require.NoError(t, os.WriteFile(bad, junk, 0o600))
	_, err = Open(context.Background(), bad, Options{})
	require.ErrorIs(t, err, gccl.ErrRemote)

	_, err = Create(filepath.Join(dir, "x"), Options{Slots: MaxSlots + 1})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, err = Create(filepath.Join(dir, "y"), Options{SlotSize: -5})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, err = Create(filepath.Join(dir, "no-such-dir", "z"), Options{})
	require.ErrorIs(t, err, gccl.ErrSystem)
}

// TestRefusedMessage: a receiver that refuses a message (the descriptor or
// length is not what it expected) and Fails the ring makes the producer's
// next Send fail with that error, and the receiver's later Recvs too; a
// failed producer makes the consumer's Recv fail with its error.
func TestRefusedMessage(t *testing.T) {
	s, r, _ := pair(t, Options{SlotSize: 64, Slots: 4})
	ctx := context.Background()
	require.NoError(t, s.Send(ctx, descOf(1), make([]byte, 100)))
	err := r.Recv(ctx, msg.Expect(50), func([]byte) error { t.Fatal("a refused message must not be consumed"); return nil })
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	r.Fail(err)
	require.ErrorIs(t, r.Recv(ctx, msg.Expect(100), func([]byte) error { return nil }), gccl.ErrInvalidUsage)
	err = s.Send(ctx, descOf(2), []byte{1})
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.Contains(t, err.Error(), "want 50")

	s2, r2, _ := pair(t, Options{SlotSize: 64, Slots: 4})
	s2.Fail(gccl.Errorf(gccl.RemoteError, "op", "rank 3 failed"))
	err = r2.Recv(ctx, msg.Expect(1), func([]byte) error { return nil })
	require.ErrorIs(t, err, gccl.ErrRemote)
	require.Contains(t, err.Error(), "rank 3 failed")
}

// TestFreeAndTakes: messages that take no more than Free slots are sent
// without the consumer, and Free counts what the consumer frees.
func TestFreeAndTakes(t *testing.T) {
	s, r, _ := pair(t, Options{SlotSize: 64, Slots: 4})
	assert.Equal(t, 4, s.Free())
	assert.Equal(t, 1, s.Takes(0))
	assert.Equal(t, 1, s.Takes(64))
	assert.Equal(t, 2, s.Takes(65))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.NoError(t, s.Send(ctx, d0, make([]byte, 100)), "two slots of four are free")
	require.NoError(t, s.Send(ctx, d0, nil))
	assert.Equal(t, 1, s.Free())
	require.ErrorIs(t, s.Send(ctx, d0, make([]byte, 65)), gccl.ErrTimeout, "it takes 2 slots, 1 is free")
	require.NoError(t, r.Recv(context.Background(), func(msg.Desc, int) error { return nil }, func([]byte) error { return nil }))
	assert.Equal(t, 2, s.Free(), "the consumer freed the first message's two slots; the cut-short one holds one")
	s.Close()
	assert.Zero(t, s.Free(), "a closed end has no room")
}
