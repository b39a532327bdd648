package transport

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

func TestPeerInfoRoundTripAndRejects(t *testing.T) {
	p := PeerInfo{Rank: 7, HostHash: 0xfeedface12345678, ShmPrefix: "gccl-1-r7-abcdef", NetName: "socket", NetHandle: []byte{1, 4, 10, 1, 2, 3, 0x11, 0xd7}}
	b, err := p.MarshalBinary()
	require.NoError(t, err)
	var q PeerInfo
	require.NoError(t, q.UnmarshalBinary(b))
	require.Equal(t, p, q)
	for i := range 8 * len(b) {
		c := append([]byte(nil), b...)
		c[i/8] ^= 1 << (i % 8)
		require.ErrorIs(t, new(PeerInfo).UnmarshalBinary(c), gccl.ErrInvalidArgument, "bit %d", i)
	}
	for n := range len(b) {
		require.ErrorIs(t, new(PeerInfo).UnmarshalBinary(b[:n]), gccl.ErrInvalidArgument, "truncated to %d", n)
	}
	require.ErrorIs(t, new(PeerInfo).UnmarshalBinary(append(b, 0)), gccl.ErrInvalidArgument)
	h := []byte{1}
	for _, bad := range []PeerInfo{
		{Rank: -1, NetName: "socket", NetHandle: h}, {Rank: 1 << 24, NetName: "socket", NetHandle: h},
		{NetName: "socket", NetHandle: h, ShmPrefix: "x/y"}, {NetName: "socket", NetHandle: h, ShmPrefix: ".hidden"}, {NetName: "socket", NetHandle: h, ShmPrefix: "a b"},
		{NetHandle: h}, {NetName: "a/b", NetHandle: h}, {NetName: string(make([]byte, 33)), NetHandle: h},
		{NetName: "socket"}, {NetName: "socket", NetHandle: make([]byte, network.MaxHandleSize+1)},
	} {
		_, err := bad.MarshalBinary()
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "%+v", bad)
	}
}

func FuzzPeerInfo(f *testing.F) {
	good, _ := PeerInfo{Rank: 3, HostHash: 9, ShmPrefix: "p", NetName: "ucx", NetHandle: []byte("worker address")}.MarshalBinary()
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:10])
	f.Fuzz(func(t *testing.T, data []byte) {
		var p PeerInfo
		if err := p.UnmarshalBinary(data); err != nil {
			require.ErrorIs(t, err, gccl.ErrInvalidArgument)
			require.Equal(t, PeerInfo{}, p, "a failed decode must not change the value")
			return
		}
		require.NoError(t, p.Validate())
		again, err := p.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, data, again)
	})
}
