package nettest

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TCPPairs returns n connected loopback TCP socket pairs: out[i] was
// dialled, in[i] is the accepted end of the same connection.
func TCPPairs(t testing.TB, n int) (out, in []net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		a, err := ln.Accept()
		require.NoError(t, err)
		out, in = append(out, c), append(in, a)
	}
	return out, in
}

// RandBytes returns n random bytes drawn from rng.
func RandBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return b[:n]
}
