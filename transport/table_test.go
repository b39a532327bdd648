package transport

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTablePicksInOrder: shared memory between ranks of one host that both
// allow it, TCP for everything else; names are unique and the last row
// connects any two ranks, so every peer gets a transport.
func TestTablePicksInOrder(t *testing.T) {
	me := PeerInfo{Rank: 0, HostHash: 1, ShmPrefix: "gccl-a", NetName: "socket", NetHandle: []byte{1}}
	cases := []struct {
		peer PeerInfo
		want string
	}{
		{PeerInfo{Rank: 1, HostHash: 1, ShmPrefix: "gccl-b", NetName: "socket", NetHandle: []byte{2}}, "shm"},
		{PeerInfo{Rank: 1, HostHash: 2, ShmPrefix: "gccl-b", NetName: "socket", NetHandle: []byte{2}}, "net"},
		{PeerInfo{Rank: 1, HostHash: 1, NetName: "socket", NetHandle: []byte{2}}, "net"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, pick(me, c.peer).Name(), "peer %+v", c.peer)
	}
	me.ShmPrefix = ""
	assert.Equal(t, "net", pick(me, cases[0].peer).Name(), "this rank disabled shared memory")

	names := map[string]bool{}
	for _, tr := range transports {
		assert.False(t, names[tr.Name()], "two rows named %s", tr.Name())
		names[tr.Name()] = true
	}
	assert.True(t, transports[len(transports)-1].CanConnect(PeerInfo{}, PeerInfo{}), "the last row must connect any two ranks")
}
