package wire

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/gccl/gccl/internal/auth"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fuzzDecoder fuzzes one decoder: it must never panic, and whatever it
// accepts must re-encode to exactly the input.
func fuzzDecoder[T any](f *testing.F, decode func([]byte) (T, error), encode func(*T) []byte, seeds ...T) {
	for _, s := range seeds {
		f.Add(encode(&s))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decode(b)
		if err != nil {
			return
		}
		assert.Equal(t, b, encode(&v), "accepted input must re-encode identically")
	})
}

func FuzzDecodeHello(f *testing.F) {
	fuzzDecoder(f, DecodeHello, (*Hello).Encode, Hello{NRanks: 4, Rank: 2, Addr: []byte("10.0.0.1:5")},
		Hello{NRanks: 1, Relay: true, TimeoutMs: 3000})
}

// FuzzDecodeAuth covers the one message a listener decodes before the
// dialer has proven the secret.
func FuzzDecodeAuth(f *testing.F) {
	fuzzDecoder(f, DecodeAuth, (*Auth).Encode, Auth{Key: Key{1}, Nonce: auth.NewNonce(), MAC: auth.MAC{3}})
}

func FuzzDecodeChallenge(f *testing.F) {
	fuzzDecoder(f, DecodeChallenge, (*Challenge).Encode, Challenge{Nonce: auth.NewNonce()})
}

func FuzzDecodeProof(f *testing.F) {
	fuzzDecoder(f, DecodeProof, (*Proof).Encode, Proof{MAC: auth.MAC{9}})
}

func FuzzDecodeStatus(f *testing.F) {
	fuzzDecoder(f, DecodeStatus, (*Status).Encode, Status{Code: 4, Arg: "rank", Msg: "twice"})
}

func FuzzDecodePeers(f *testing.F) {
	fuzzDecoder(f, DecodePeers, (*Peers).Encode, Peers{Addrs: [][]byte{[]byte("a:1"), {}, []byte("b:2")}})
}

func FuzzDecodePeerHello(f *testing.F) {
	fuzzDecoder(f, DecodePeerHello, (*PeerHello).Encode, PeerHello{NRanks: 8, From: 3, To: 7})
}

func FuzzDecodeData(f *testing.F) {
	fuzzDecoder(f, DecodeData, (*Data).Encode, Data{Internal: true, Tag: 99, Payload: []byte("xyz")})
}

func FuzzDecodeRootID(f *testing.F) {
	encode := func(id *RootID) []byte { b := id.Encode(); return b[:] }
	fuzzDecoder(f, DecodeRootID, encode,
		RootID{Addr: netip.MustParseAddrPort("192.0.2.1:1234"), Key: Key{1}, Secret: Secret{2}},
		RootID{Addr: netip.MustParseAddrPort("[fd00::1]:80")})
}

func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, TypeHello, []byte("hi")), 100)
	f.Add(AppendFrame(nil, TypeData, nil), 0)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		typ, p, err := ReadFrame(bytes.NewReader(b), max)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(p), max)
		assert.Equal(t, b[:HeaderSize+len(p)], AppendFrame(nil, typ, p))
	})
}
