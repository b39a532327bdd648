package net

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/nettest"
	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threadsOn counts this process's threads whose affinity is exactly cpus
// (/proc/self/task/*/status, Cpus_allowed_list).
func threadsOn(t *testing.T, cpus topo.CPUSet) int {
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	require.NoError(t, err)
	n := 0
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) == cpus.String() {
				n++
			}
		}
	}
	return n
}

// TestHelpersArePinned: with Options.CPUs each helper runs on a thread of
// its own restricted to them, transfers still arrive intact, and Close
// gives those threads their masks back. The CPU is one this process may already use, so
// the test narrows nothing else.
func TestHelpersArePinned(t *testing.T) {
	all, err := topo.ThreadAffinity()
	require.NoError(t, err)
	if len(all) < 2 {
		t.Skip("one CPU allowed: a pinned thread looks like any other")
	}
	one := all[len(all)-1:]
	require.Zero(t, threadsOn(t, one), "no thread is on %s alone before", one)

	out, in := nettest.TCPPairs(t, 4) // 3 data sockets: 3 helpers a side
	o := Options{Timeout: 5 * time.Second, CPUs: one}
	s, err := NewSendComm(out, o)
	require.NoError(t, err)
	r, err := NewRecvComm(in, o)
	require.NoError(t, err)

	msg := make([]byte, 3<<20)
	for i := range msg {
		msg[i] = byte(i*7 + 1)
	}
	got := make([]byte, len(msg))
	rq := postOn(t, r, got, func(g network.Region, m network.MemHandle) (network.Request, error) { return r.Irecv(g, m, 9) })
	sq := postOn(t, s, msg, func(g network.Region, m network.MemHandle) (network.Request, error) { return s.Isend(g, m, 9) })
	_, err = waitFor(t, sq)
	require.NoError(t, err)
	n, err := waitFor(t, rq)
	require.NoError(t, err)
	require.Equal(t, len(msg), n)
	require.Equal(t, msg, got)
	assert.Equal(t, 6, threadsOn(t, one), "three helpers on each side, each on its own pinned thread")

	require.NoError(t, s.Close())
	require.NoError(t, r.Close())
	require.Eventually(t, func() bool { return threadsOn(t, one) == 0 }, 5*time.Second, 10*time.Millisecond,
		"the helpers' threads get their masks back")
}
