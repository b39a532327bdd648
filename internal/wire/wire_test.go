package wire

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func randKey(r *rand.Rand) (k [16]byte) {
	copy(k[:], randBytes(r, 16))
	return k
}

func TestFrameRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	var sent [][]byte
	for i := range 50 {
		p := randBytes(r, r.IntN(3000))
		sent = append(sent, p)
		require.NoError(t, WriteFrame(&buf, Type(1+i%int(numTypes-1)), p))
	}
	for i, want := range sent {
		typ, got, err := ReadFrame(&buf, MaxPayload)
		require.NoError(t, err)
		assert.Equal(t, Type(1+i%int(numTypes-1)), typ)
		assert.Equal(t, want, got)
	}
	_, _, err := ReadFrame(&buf, MaxPayload)
	assert.ErrorIs(t, err, io.EOF)
}

// TestWriteDataMatchesEncode: WriteData's frame (header, prefix and payload
// gathered in one write) is byte for byte the frame of Data.Encode, and the
// decoded payload cannot be appended over the bytes after it.
func TestWriteDataMatchesEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 4096} {
		m := Data{Internal: n%2 == 0, Tag: r.Uint64(), Payload: randBytes(r, n)}
		var got, want bytes.Buffer
		require.NoError(t, WriteData(&got, &m))
		require.NoError(t, WriteFrame(&want, TypeData, m.Encode()))
		require.Equal(t, want.Bytes(), got.Bytes(), "%d bytes", n)
		typ, p, err := ReadFrame(&got, MaxPayload)
		require.NoError(t, err)
		require.Equal(t, TypeData, typ)
		_, err = DecodeData(append(p[:len(p):len(p)], 0xAA)) // a byte after the payload
		require.Error(t, err, "trailing bytes must be refused")
		d, err := DecodeData(p)
		require.NoError(t, err)
		assert.Equal(t, m.Payload, d.Payload)
		assert.Equal(t, len(d.Payload), cap(d.Payload), "the payload's capacity ends with it")
	}
}

func TestFrameRejects(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	good := AppendFrame(nil, TypeData, randBytes(r, 100))
	cases := map[string]func([]byte) []byte{
		"magic":     func(b []byte) []byte { b[0] ^= 1; return b },
		"version":   func(b []byte) []byte { b[4] = 9; return b },
		"type":      func(b []byte) []byte { b[5] = 0; return b },
		"typeHigh":  func(b []byte) []byte { b[5] = 200; return b },
		"reserved":  func(b []byte) []byte { b[7] = 1; return b },
		"crc":       func(b []byte) []byte { b[HeaderSize+7] ^= 0x40; return b },
		"oversized": func(b []byte) []byte { b[11] = 0x7f; return b },
	}
	for name, mutate := range cases {
		b := mutate(append([]byte{}, good...))
		_, _, err := ReadFrame(bytes.NewReader(b), MaxPayload)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, gccl.ErrRemote, name)
	}
	_, _, err := ReadFrame(bytes.NewReader(good), 50)
	assert.ErrorIs(t, err, gccl.ErrRemote, "a limit below the length must reject")
	_, _, err = ReadFrame(bytes.NewReader(good[:60]), MaxPayload)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorIs(t, WriteFrame(io.Discard, TypeData, make([]byte, MaxPayload+1)), gccl.ErrInvalidArgument)
}

func TestMessagesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		n := 1 + r.Uint32N(1000)
		h := Hello{Sub: uint8(r.UintN(2)), NRanks: n, Rank: r.Uint32N(n),
			Base: r.Uint32(), TimeoutMs: r.Uint64(), Relay: r.IntN(2) == 1, Addr: randBytes(r, r.IntN(300))}
		roundTrip(t, h, (*Hello).Encode, DecodeHello)
		s := Status{Code: r.Uint32N(9), Arg: string(randBytes(r, r.IntN(20))), Msg: string(randBytes(r, r.IntN(200)))}
		roundTrip(t, s, (*Status).Encode, DecodeStatus)
		p := Peers{Addrs: make([][]byte, r.IntN(20))}
		for i := range p.Addrs {
			p.Addrs[i] = randBytes(r, r.IntN(40))
		}
		roundTrip(t, p, (*Peers).Encode, DecodePeers)
		ph := PeerHello{NRanks: n, From: r.Uint32N(n), To: r.Uint32N(n)}
		roundTrip(t, ph, (*PeerHello).Encode, DecodePeerHello)
		a := Auth{Key: randKey(r), Nonce: auth.Nonce(randBytes(r, auth.NonceSize)), MAC: auth.MAC(randBytes(r, auth.MACSize))}
		roundTrip(t, a, (*Auth).Encode, DecodeAuth)
		ch := Challenge{Nonce: a.Nonce}
		roundTrip(t, ch, (*Challenge).Encode, DecodeChallenge)
		pr := Proof{MAC: a.MAC}
		roundTrip(t, pr, (*Proof).Encode, DecodeProof)
		d := Data{Internal: r.IntN(2) == 1, Tag: r.Uint64(), Payload: randBytes(r, r.IntN(500))}
		roundTrip(t, d, (*Data).Encode, DecodeData)
	}
}

// roundTrip checks decode(encode(v)) == v and that every strict prefix fails.
func roundTrip[T any](t *testing.T, v T, encode func(*T) []byte, decode func([]byte) (T, error)) {
	t.Helper()
	b := encode(&v)
	got, err := decode(b)
	require.NoError(t, err)
	assert.Equal(t, normalize(v), normalize(got))
	for _, cut := range []int{0, len(b) / 2, len(b) - 1} {
		if cut < len(b) {
			_, err := decode(b[:cut])
			assert.ErrorIs(t, err, gccl.ErrRemote, "prefix of %d/%d bytes", cut, len(b))
		}
	}
	_, err = decode(append(b, 0))
	assert.ErrorIs(t, err, gccl.ErrRemote, "trailing byte")
}

// normalize maps nil and empty byte slices to one form for comparison.
func normalize(v any) any {
	switch m := v.(type) {
	case Hello:
		m.Addr = append([]byte{}, m.Addr...)
		return m
	case Data:
		m.Payload = append([]byte{}, m.Payload...)
		return m
	case Peers:
		for i := range m.Addrs {
			m.Addrs[i] = append([]byte{}, m.Addrs[i]...)
		}
		return m
	}
	return v
}

func TestHelloRejectsBadRanks(t *testing.T) {
	for _, h := range []Hello{{NRanks: 0}, {NRanks: 4, Rank: 4}, {NRanks: MaxRanks + 1}} {
		_, err := DecodeHello(h.Encode())
		assert.ErrorIs(t, err, gccl.ErrRemote, "%+v", h)
	}
	_, err := DecodePeerHello((&PeerHello{NRanks: 3, From: 1, To: 3}).Encode())
	assert.ErrorIs(t, err, gccl.ErrRemote)
}

func TestPeersCountBounded(t *testing.T) {
	e := &enc{}
	e.u32(MaxRanks) // claims a million entries in four bytes
	_, err := DecodePeers(e.b)
	assert.ErrorIs(t, err, gccl.ErrRemote)
}

func TestStatusErr(t *testing.T) {
	s := StatusOf(gccl.Errorf(gccl.InvalidArgument, "rank", "rank 3 joined twice"))
	b := s.Encode()
	got, err := DecodeStatus(b)
	require.NoError(t, err)
	e := got.Err()
	assert.ErrorIs(t, e, gccl.ErrInvalidArgument)
	var ge *gccl.Error
	require.True(t, errors.As(e, &ge))
	assert.Equal(t, "rank", ge.Arg)
	assert.Contains(t, ge.Msg, "joined twice")
	ok := StatusOf(nil)
	assert.NoError(t, ok.Err())
}

func TestRootIDRoundTripAndRejects(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	addrs := []string{"192.0.2.7:4242", "[fd00::2]:65535", "127.0.0.1:1"}
	for _, a := range addrs {
		id := RootID{Addr: netip.MustParseAddrPort(a), Key: randKey(r), Secret: randKey(r)}
		b := id.Encode()
		got, err := DecodeRootID(b[:])
		require.NoError(t, err)
		assert.Equal(t, id, got)
		for i := range IDBytes { // every single flipped bit is caught
			c := b
			c[i] ^= 1 << r.UintN(8)
			_, err := DecodeRootID(c[:])
			assert.ErrorIs(t, err, gccl.ErrInvalidArgument, "byte %d", i)
		}
		_, err = DecodeRootID(b[:100])
		assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	}
	_, err := DecodeRootID(randBytes(r, IDBytes))
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
}
