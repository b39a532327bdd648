package testbed

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newBed makes a bed for a test (failing, never skipping, where
// namespaces cannot be made) and checks after the test that nothing of
// it is left.
func newBed(t *testing.T, cfg Config) *Bed {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	b, err := New(cfg)
	require.NoError(t, err)
	var pids []int
	for _, h := range b.Hosts() {
		pids = append(pids, h.Pid)
	}
	pids = append(pids, b.sw.pid)
	t.Cleanup(func() {
		require.NoError(t, b.Close())
		for _, p := range pids {
			assert.False(t, isHolder(p), "holder %d outlived Close", p)
		}
		_, err := os.Stat(b.Dir())
		assert.True(t, os.IsNotExist(err), "state directory left behind")
	})
	return b
}

func TestHostsHaveNamesAddressesAndReachEachOther(t *testing.T) {
	b := newBed(t, Config{Hosts: 3, Name: "tb"})
	for _, h := range b.Hosts() {
		var out bytes.Buffer
		cmd := exec.Command("cat", "/proc/sys/kernel/hostname", "/proc/net/fib_trie")
		cmd.Stdout = &out
		require.NoError(t, b.Start(h.Index, cmd))
		require.NoError(t, cmd.Wait())
		assert.True(t, strings.HasPrefix(out.String(), h.Name+"\n"), "host name: %q", out.String())
		assert.Contains(t, out.String(), h.Addr.String())
	}
	// A listener in host 2, a connection from host 0, bytes both ways.
	var ln net.Listener
	require.NoError(t, inNS(b.Hosts()[2].h.ns, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(b.Hosts()[2].Addr.String(), "0"))
		return err
	}))
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(c, c)
			c.Close()
		}
	}()
	var c net.Conn
	require.NoError(t, inNS(b.Hosts()[0].h.ns, func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}))
	defer c.Close()
	_, err := c.Write([]byte("ping"))
	require.NoError(t, err)
	got := make([]byte, 4)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(got))
	// The test's own namespace has no bed address.
	_, err = net.DialTimeout("tcp", ln.Addr().String(), 200*time.Millisecond)
	assert.Error(t, err, "the machine's own namespace must not reach the bed")
}

func TestCloseKillsProcessesInHosts(t *testing.T) {
	b := newBed(t, Config{Hosts: 2})
	cmd := exec.Command("sh", "-c", "sleep 600 & sleep 600")
	require.NoError(t, b.Start(1, cmd))
	time.Sleep(100 * time.Millisecond)
	ns := nsOf(b.Hosts()[1].Pid)
	require.NoError(t, b.Close())
	assert.Empty(t, killInNS([]nsPair{ns}), "processes left in the host")
	_ = cmd.Wait()
}

// TestCrashedBedIsCleaned: a bed whose creator was killed (SIGKILL: no
// Close) is gone after the next New.
func TestCrashedBedIsCleaned(t *testing.T) {
	if os.Getenv("TESTBED_CRASH_CHILD") != "" {
		b, err := New(Config{Hosts: 2, StateDir: os.Getenv("TESTBED_CRASH_CHILD")})
		if err != nil {
			t.Fatal(err)
		}
		// No parent death signal: the sleeper outlives this process and
		// keeps host 0's namespaces alive, as a crashed run's ranks would.
		sleeper := exec.Command("sleep", "600")
		sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := b.Start(0, sleeper); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%03d\n", 0)
		fmt.Println(sleeper.Process.Pid)
		time.Sleep(time.Minute)
		return
	}
	state := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestCrashedBedIsCleaned$")
	child.Env = append(os.Environ(), "TESTBED_CRASH_CHILD="+state)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	var pid int
	_, err = fmt.Fscan(out, new(int), &pid)
	require.NoError(t, err)
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	dirs, _ := filepath.Glob(filepath.Join(state, "bed-*"))
	require.Len(t, dirs, 1, "the crashed run's state")
	b := newBed(t, Config{Hosts: 1, StateDir: state})
	dirs, _ = filepath.Glob(filepath.Join(state, "bed-*"))
	assert.Equal(t, []string{b.Dir()}, dirs, "the crashed bed's state was not removed")
	waitGone([]int{pid}, 5*time.Second)
	assert.False(t, running(pid), "the crashed bed's process %d still runs", pid)
}

// TestFailedNewLeavesNothing: a bed that fails half-built (here: a
// host name the kernel refuses) is torn down, its state directory too.
func TestFailedNewLeavesNothing(t *testing.T) {
	state := t.TempDir()
	_, err := New(Config{Hosts: 2, Name: strings.Repeat("x", 70), StateDir: state})
	require.Error(t, err)
	dirs, _ := filepath.Glob(filepath.Join(state, "bed-*"))
	assert.Empty(t, dirs)
}

func TestShapingWithoutTCFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New(Config{Hosts: 1, Rate: 1e9, StateDir: t.TempDir()})
	assert.ErrorIs(t, err, ErrNoTC)
}

// qdiscs returns what tc shows of host i's eth0.
func qdiscs(t *testing.T, b *Bed, i int) string {
	var out bytes.Buffer
	cmd := exec.Command("tc", "qdisc", "show", "dev", "eth0")
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, b.Start(i, cmd))
	require.NoError(t, cmd.Wait(), "%s", out.String())
	return out.String()
}

func TestLinksShapedPerHost(t *testing.T) {
	b := newBed(t, Config{Hosts: 3, Rate: 200e6, Links: map[int]Link{2: {}}})
	assert.Contains(t, qdiscs(t, b, 1), "tbf")
	assert.Contains(t, qdiscs(t, b, 1), "200Mbit")
	assert.NotContains(t, qdiscs(t, b, 2), "tbf", "host 2's link is unshaped")
	require.NoError(t, b.Shape(2, Link{Rate: 50e6}))
	assert.Contains(t, qdiscs(t, b, 2), "50Mbit")
	require.NoError(t, b.Shape(1, Link{}))
	assert.NotContains(t, qdiscs(t, b, 1), "tbf", "host 1's limit removed")
}

func TestCutDropsAHostsPackets(t *testing.T) {
	b := newBed(t, Config{Hosts: 2})
	var ln net.Listener
	require.NoError(t, b.Host(1, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(b.Hosts()[1].Addr.String(), "0"))
		return err
	}))
	defer ln.Close()
	dial := func() error {
		return b.Host(0, func() error {
			c, err := net.DialTimeout("tcp", ln.Addr().String(), 300*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err
		})
	}
	require.NoError(t, dial())
	require.NoError(t, b.Cut(1, false))
	assert.Error(t, dial(), "host 1 is unplugged")
	require.NoError(t, b.Cut(1, true))
	var err error
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); { // the port needs a moment
		if err = dial(); err == nil {
			break
		}
	}
	assert.NoError(t, err, "host 1 is plugged back")
}

// TestGatewaysOfTwoBedsDoNotCollide: two beds with gateways at once get
// different subnets, and each bed's hosts reach this namespace.
func TestGatewaysOfTwoBedsDoNotCollide(t *testing.T) {
	state := t.TempDir()
	a := newBed(t, Config{Hosts: 1, Gateway: true, StateDir: state})
	b := newBed(t, Config{Hosts: 1, Gateway: true, StateDir: state})
	ga, _ := a.Gateway()
	gb, ok := b.Gateway()
	require.True(t, ok)
	assert.NotEqual(t, ga.Masked(), gb.Masked())
	for _, bed := range []*Bed{a, b} {
		gw, _ := bed.Gateway()
		ln, err := net.Listen("tcp", net.JoinHostPort(gw.Addr().String(), "0"))
		require.NoError(t, err)
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
		}()
		require.NoError(t, bed.Host(0, func() error {
			c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err == nil {
				c.Close()
			}
			return err
		}))
		ln.Close()
	}
	_, err := New(Config{Hosts: 1, Gateway: true, Subnet: ga.Masked(), StateDir: state})
	assert.ErrorContains(t, err, "in use", "an explicit subnet already in use")
}
