package fdpass

import (
	"context"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/nettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// servedFile makes a temporary file of n random bytes to serve.
func servedFile(t *testing.T, rng *rand.Rand, n int) (*os.File, []byte) {
	f, err := os.Create(filepath.Join(t.TempDir(), "served"))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	data := nettest.RandBytes(rng, n)
	_, err = f.WriteAt(data, 0)
	require.NoError(t, err)
	return f, data
}

// sameFile checks that fd refers to f: same inode, and bytes written
// through either are read through the other.
func sameFile(t *testing.T, rng *rand.Rand, f *os.File, fd int, size int) {
	t.Helper()
	var a, b syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(f.Fd()), &a))
	require.NoError(t, syscall.Fstat(fd, &b))
	require.Equal(t, [2]uint64{a.Dev, a.Ino}, [2]uint64{b.Dev, b.Ino})
	off, n := rng.IntN(size/2), 1+rng.IntN(size/2)
	data := nettest.RandBytes(rng, n)
	_, err := syscall.Pwrite(fd, data, int64(off))
	require.NoError(t, err)
	got := make([]byte, n)
	_, err = f.ReadAt(got, int64(off))
	require.NoError(t, err)
	require.Equal(t, data, got, "written through the received descriptor")
	data = nettest.RandBytes(rng, n)
	_, err = f.WriteAt(data, int64(off))
	require.NoError(t, err)
	_, err = syscall.Pread(fd, got, int64(off))
	require.NoError(t, err)
	require.Equal(t, data, got, "read through the received descriptor")
}

func TestFDPassServesWantedPeers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	f, _ := servedFile(t, rng, 1<<16)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const want = 3
	s, err := Serve(ctx, int(f.Fd()), want)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, byte('@'), s.Name[0], "abstract namespace")
	_, err = os.Stat(s.Name[1:])
	require.True(t, os.IsNotExist(err), "nothing on the file system")

	fds := make([]int, want)
	var wg sync.WaitGroup
	errs := make([]error, want)
	for i := range want {
		wg.Go(func() { fds[i], errs[i] = Fetch(ctx, s.Name, s.Token) })
	}
	wg.Wait()
	for i := range want {
		require.NoError(t, errs[i])
		require.NotEqual(t, int(f.Fd()), fds[i], "a new descriptor")
		sameFile(t, rng, f, fds[i], 1<<16)
		require.NoError(t, syscall.Close(fds[i]))
	}
	assert.Equal(t, want, s.Fetches())
	eventually(t, "the server to close after its fetches", func() bool {
		c, err := net.Dial("unix", s.Name)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	_, err = Fetch(ctx, s.Name, s.Token)
	gccltest.RequireCode(t, err, gccl.RemoteError)
	assert.Equal(t, want, s.Fetches())
}

func TestFDPassRefusesWrongToken(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	f, _ := servedFile(t, rng, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := Serve(ctx, int(f.Fd()), 1)
	require.NoError(t, err)
	defer s.Close()
	for range 5 {
		bad := s.Token
		bad[rng.IntN(TokenLen)] ^= byte(1 + rng.IntN(255))
		fd, err := Fetch(ctx, s.Name, bad)
		gccltest.RequireCode(t, err, gccl.RemoteError)
		assert.Equal(t, -1, fd)
	}
	// A peer that connects and says nothing blocks no one.
	idle, err := net.Dial("unix", s.Name)
	require.NoError(t, err)
	defer idle.Close()
	assert.Zero(t, s.Fetches(), "refused fetches do not count")
	fd, err := Fetch(ctx, s.Name, s.Token)
	require.NoError(t, err)
	sameFile(t, rng, f, fd, 4096)
	require.NoError(t, syscall.Close(fd))
	assert.Equal(t, 1, s.Fetches())

	_, err = Fetch(ctx, "relative/path", s.Token)
	gccltest.RequireCode(t, err, gccl.RemoteError)
	_, err = Fetch(ctx, "@", s.Token)
	gccltest.RequireCode(t, err, gccl.RemoteError)
}

func TestFDPassHonoursDeadlines(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	f, _ := servedFile(t, rng, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	s, err := Serve(ctx, int(f.Fd()), 2)
	require.NoError(t, err)
	idle, err := net.Dial("unix", s.Name) // holds a connection open past the deadline
	require.NoError(t, err)
	defer idle.Close()
	<-ctx.Done()
	start := time.Now()
	s.Close()
	assert.Less(t, time.Since(start), 2*time.Second, "Close after the deadline")
	_, err = net.Dial("unix", s.Name)
	require.Error(t, err, "closed at its deadline")

	// A server that accepts and never answers: the fetch gives up at its
	// deadline with a timeout.
	mute, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@gccl-bufreg-test-mute-" + s.Name[len(s.Name)-8:], Net: "unix"})
	require.NoError(t, err)
	defer mute.Close()
	go func() {
		c, err := mute.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c) // until the fetch hangs up
			c.Close()
		}
	}()
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	start = time.Now()
	_, err = Fetch(short, mute.Addr().String(), s.Token)
	gccltest.RequireCode(t, err, gccl.TimeoutError)
	assert.Less(t, time.Since(start), 2*time.Second)

	done, cancel3 := context.WithCancel(context.Background())
	cancel3()
	s, err = Serve(done, int(f.Fd()), 1)
	require.NoError(t, err, "an ended context serves nothing but is no error")
	s.Close()
}

func TestFDPassBadArguments(t *testing.T) {
	_, err := Serve(context.Background(), -1, 1)
	gccltest.RequireCode(t, err, gccl.InvalidArgument)
	var s *Server
	s.Close()
	s.Expect(3)
}

// childEnv names the socket, token and data for TestFDPassChild.
const childEnv = "GCCL_FDPASS_CHILD"

// TestFDPassToAnotherProcess hands a descriptor to a real child process
// (this test binary, running TestFDPassChild), which writes through it.
func TestFDPassToAnotherProcess(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	f, _ := servedFile(t, rng, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Serve(ctx, int(f.Fd()), 1)
	require.NoError(t, err)
	defer s.Close()
	data := nettest.RandBytes(rng, 64)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFDPassChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+s.Name+","+hex.EncodeToString(s.Token[:])+","+hex.EncodeToString(data))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "PASS")
	got := make([]byte, len(data))
	_, err = f.ReadAt(got, 128)
	require.NoError(t, err)
	require.Equal(t, data, got, "the child wrote through the descriptor it received")
	assert.Equal(t, 1, s.Fetches())
}

// TestFDPassChild is the child of TestFDPassToAnotherProcess; alone it
// does nothing.
func TestFDPassChild(t *testing.T) {
	arg := os.Getenv(childEnv)
	if arg == "" {
		t.Skip("run by TestFDPassToAnotherProcess")
	}
	parts := strings.Split(arg, ",")
	require.Len(t, parts, 3)
	tok, err := hex.DecodeString(parts[1])
	require.NoError(t, err)
	data, err := hex.DecodeString(parts[2])
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fd, err := Fetch(ctx, parts[0], [TokenLen]byte(tok))
	require.NoError(t, err)
	defer syscall.Close(fd)
	_, err = syscall.Pwrite(fd, data, 128)
	require.NoError(t, err)
}

// TestFDPassServesNoMoreThanWanted: of more concurrent fetchers than the
// server expects, exactly the expected number get the descriptor; expect
// lowers the count once the exchange says who needs it.
func TestFDPassServesNoMoreThanWanted(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	f, _ := servedFile(t, rng, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range []struct{ want, lowered, fetchers int }{{1, 1, 4}, {5, 2, 6}, {3, 0, 2}} {
		s, err := Serve(ctx, int(f.Fd()), c.want)
		require.NoError(t, err)
		s.Expect(c.lowered)
		fds, errs := gccltest.Parallel(c.fetchers, func(int) (int, error) { return Fetch(ctx, s.Name, s.Token) })
		ok := 0
		for i := range c.fetchers {
			if errs[i] == nil {
				ok++
				sameFile(t, rng, f, fds[i], 4096)
				require.NoError(t, syscall.Close(fds[i]))
			} else {
				gccltest.RequireCode(t, errs[i], gccl.RemoteError)
			}
		}
		assert.Equal(t, c.lowered, ok, "%+v", c)
		assert.Equal(t, c.lowered, s.Fetches())
		s.Close()
	}
}
