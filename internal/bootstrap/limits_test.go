package bootstrap

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawConnect opens a TCP connection with bare syscalls, so that the
// attacker's side costs this process no Go memory, and sends b.
func rawConnect(t *testing.T, id wire.RootID, b []byte) int {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.Connect(fd, &syscall.SockaddrInet4{Port: int(id.Addr.Port()), Addr: id.Addr.Addr().As4()}))
	if len(b) > 0 {
		_, err = syscall.Write(fd, b)
		require.NoError(t, err)
	}
	return fd
}

// usage is the Go heap and stacks in use, after a collection.
func usage() (uint64, int) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse, runtime.NumGoroutine()
}

// unauthBound is what the root may spend on unauthenticated connections,
// however many there are: maxUnauthenticated handshakes of at most 16 KiB
// each (goroutine stack, socket, reads of at most wire.AuthMax bytes).
const unauthBound = maxUnauthenticated * 16 << 10

// TestUnauthenticatedMemoryBounded opens 2000 connections to the root that
// never authenticate (idle, a partial auth, a hello header announcing the
// largest payload) and measures the root's memory: it must stay under
// unauthBound, and the root must serve a genuine rank once they are gone.
func TestUnauthenticatedMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2000 sockets")
	}
	id, err := NewRootID()
	require.NoError(t, err)
	if !id.Addr.Addr().Is4() {
		t.Skip("the raw-socket attacker speaks IPv4 only")
	}
	big := make([]byte, wire.HeaderSize+64)
	wire.EncodeHeader(big, wire.Header{Type: wire.TypeHello, Length: wire.MaxPayload})
	partial := wire.AppendFrame(nil, wire.TypeAuth, make([]byte, wire.AuthMax))[:wire.HeaderSize+20]
	sends := [][]byte{nil, partial, big}
	mem0, g0 := usage()
	var fds []int
	defer func() {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
	}()
	for _, n := range []int{16, 2000} {
		for len(fds) < n {
			fds = append(fds, rawConnect(t, id, sends[len(fds)%len(sends)]))
		}
		time.Sleep(500 * time.Millisecond) // let the root take what it will
		mem, g := usage()
		grown := int64(mem) - int64(mem0)
		t.Logf("%d unauthenticated connections: root heap+stacks %+.2f MiB, %+d goroutines (bound %d MiB, %d handshakes)",
			n, float64(grown)/(1<<20), g-g0, unauthBound>>20, maxUnauthenticated)
		require.Less(t, grown, int64(unauthBound), "%d connections", n)
		require.LessOrEqual(t, g-g0, maxUnauthenticated+8, "%d connections", n)
	}
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
	fds = nil
	start := time.Now()
	n, err := Init(t.Context(), id, 1, 0, short)
	require.NoError(t, err, "a genuine rank after the attack")
	require.NoError(t, n.Close())
	assert.Less(t, time.Since(start), authTimeout+2*time.Second)
	t.Logf("genuine rank joined %v after the attackers left", time.Since(start).Round(time.Millisecond))
}
