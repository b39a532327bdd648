package shm

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/internal/msg"
	"github.com/stretchr/testify/require"
)

// TestHelperProcess is not a test: run by TestDeadPeerProcess in a child
// process, it creates a ring, sends into it and waits to be killed.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv("GCCL_SHM_HELPER_RING")
	if path == "" {
		t.Skip("helper process only")
	}
	s, err := Create(path, Options{SlotSize: 64, Slots: 2})
	if err != nil {
		os.Exit(2)
	}
	_ = s.Send(context.Background(), msg.Desc{}, []byte("alive"))
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Minute)
	os.Exit(3)
}

// TestDeadPeerProcess kills the producing process: the consumer, waiting
// for more bytes, must report gccl.ErrRemote long before its deadline.
func TestDeadPeerProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "GCCL_SHM_HELPER_RING="+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	defer r.Close()
	var got []byte
	require.NoError(t, r.Recv(ctx, msg.Expect(5), func(p []byte) error { got = append(got, p...); return nil }))
	require.Equal(t, "alive", string(got))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait() // reap it, so the pid is really gone
	start := time.Now()
	err = r.Recv(ctx, msg.Expect(1), func([]byte) error { return nil })
	require.ErrorIs(t, err, gccl.ErrRemote)
	require.Contains(t, err.Error(), "gone")
	require.Less(t, time.Since(start), 5*time.Second)
}
