package bootstrap

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const emfileChild = "GCCL_TEST_EMFILE_CHILD"

// TestRootSurvivesEMFILE runs a root in a child process, exhausts the
// child's file descriptors while connections arrive (so its accept fails
// with EMFILE), frees them, and then joins a communicator at that root: the
// listener must still be accepting.
func TestRootSurvivesEMFILE(t *testing.T) {
	if os.Getenv(emfileChild) != "" {
		t.Skip("in the child")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestEMFILEChild$", "-test.v")
	cmd.Env = append(os.Environ(), emfileChild+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var logs gccltest.SyncBuffer
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	expect := func(prefix string) string {
		for lines.Scan() {
			if s, ok := strings.CutPrefix(lines.Text(), prefix); ok {
				return s
			}
		}
		t.Fatalf("the child never said %q; its log:\n%s", prefix, logs.String())
		return ""
	}
	b, err := hex.DecodeString(expect("id "))
	require.NoError(t, err)
	id, err := wire.DecodeRootID(b)
	require.NoError(t, err)
	expect("exhausted")
	// These arrive while the child has no fd to accept them with.
	for range 4 {
		c, err := net.DialTimeout("tcp", id.Addr.String(), 5*time.Second)
		require.NoError(t, err)
		defer c.Close()
	}
	time.Sleep(300 * time.Millisecond)
	_, err = fmt.Fprintln(stdin, "release")
	require.NoError(t, err)
	expect("released")
	start := time.Now()
	n, err := Init(ctx, id, 1, 0, short)
	require.NoError(t, err, "the root listener died of EMFILE; child log:\n%s", logs.String())
	require.NoError(t, n.Close())
	t.Logf("joined the child's root %v after the EMFILE burst", time.Since(start).Round(time.Millisecond))
	_ = stdin.Close()
	require.NoError(t, cmd.Wait())
	assert.Contains(t, logs.String(), "too many open files", "the burst must really have hit accept")
}

// TestEMFILEChild is the child of TestRootSurvivesEMFILE.
func TestEMFILEChild(t *testing.T) {
	if os.Getenv(emfileChild) == "" {
		t.Skip("run by TestRootSurvivesEMFILE")
	}
	env.SetOutput(os.Stderr)
	id, err := NewRootID()
	require.NoError(t, err)
	b := id.Encode()
	fmt.Println("id " + hex.EncodeToString(b[:]))
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	low := lim
	low.Cur = 256
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	var files []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			break
		}
		require.NoError(t, err)
		files = append(files, f)
	}
	fmt.Println("exhausted")
	in := bufio.NewScanner(os.Stdin)
	in.Scan() // "release"
	for _, f := range files {
		_ = f.Close()
	}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	fmt.Println("released")
	in.Scan() // stdin closes when the parent is done
}
