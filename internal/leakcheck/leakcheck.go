package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/cuda/cudafake"
)

// Grace is how long Main waits for resources to be released before it
// calls them leaked.
const Grace = 2 * time.Second

// ShmDir is where gccl's shared-memory files live.
const ShmDir = "/dev/shm"

// Main runs the tests, checks for leaks when they passed, and exits.
func Main(m *testing.M) {
	before := Take()
	code := m.Run()
	if code == 0 {
		if leaks := before.Leaks(Grace); len(leaks) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: the tests passed but left behind:\n%s\n", strings.Join(leaks, "\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// Snapshot is what the process holds at one moment.
type Snapshot struct {
	goroutines map[int]bool   // goroutine ids
	fds        map[int]string // fd -> what it refers to
	shm        map[string]bool
	fake       int // cudafake.Live()
}

// Take records the process's goroutines, fds, shared-memory files and fake
// allocations now.
func Take() Snapshot {
	s := Snapshot{goroutines: map[int]bool{}, fds: fds(), shm: map[string]bool{}, fake: cudafake.Live()}
	for _, g := range goroutines() {
		s.goroutines[g.id] = true
	}
	for _, name := range shmFiles() {
		s.shm[name] = true
	}
	return s
}

// Leaks compares the process with s, retrying for up to grace while
// anything is left, and describes each resource that is new since s.
func (s Snapshot) Leaks(grace time.Duration) []string {
	deadline := time.Now().Add(grace)
	for {
		leaks := s.diff()
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s Snapshot) diff() []string {
	var out []string
	for _, g := range goroutines() {
		if !s.goroutines[g.id] && !runtimeOwned(g.stack) {
			out = append(out, "goroutine still running:\n"+g.stack)
		}
	}
	fresh := map[int]string{}
	driver := false // the CUDA driver was loaded during the tests
	for fd, target := range fds() {
		if old, ok := s.fds[fd]; (!ok || old != target) && !runtimeFD(target) {
			fresh[fd] = target
			driver = driver || strings.HasPrefix(target, "/dev/nvidia")
		}
	}
	for fd, target := range fresh {
		if !driverFD(target, driver) {
			out = append(out, fmt.Sprintf("fd %d still open: %s", fd, target))
		}
	}
	for _, name := range shmFiles() {
		if !s.shm[name] {
			out = append(out, "shared-memory file left: "+filepath.Join(ShmDir, name))
		}
	}
	if n := cudafake.Live(); n > s.fake {
		out = append(out, fmt.Sprintf("%d fake-driver allocation(s) not freed (cudafake.Live %d, %d before)", n-s.fake, n, s.fake))
	}
	return out
}

type goroutine struct {
	id    int
	stack string
}

// goroutines lists every goroutine but the caller's.
func goroutines() []goroutine {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for i, block := range bytes.Split(buf, []byte("\n\n")) {
		header, _, _ := strings.Cut(string(block), "\n")
		f := strings.Fields(header) // goroutine 12 [chan receive]:
		if i == 0 || len(f) < 2 || f[0] != "goroutine" {
			continue // the first is the caller's
		}
		id, err := strconv.Atoi(f[1])
		if err == nil {
			out = append(out, goroutine{id: id, stack: string(block)})
		}
	}
	return out
}

// runtimeOwned reports goroutines the Go runtime and testing start for
// themselves on first use.
func runtimeOwned(stack string) bool {
	for _, fn := range []string{"os/signal.signal_recv", "os/signal.loop", "runtime.ensureSigM", "testing.(*M).startAlarm"} {
		if strings.Contains(stack, fn) {
			return true
		}
	}
	return false
}

// fds maps each open descriptor to its target (/proc/self/fd links).
func fds() map[int]string {
	out := map[int]string{}
	dir, err := os.Open("/proc/self/fd")
	if err != nil {
		return out
	}
	defer dir.Close()
	names, _ := dir.Readdirnames(-1)
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd == int(dir.Fd()) {
			continue
		}
		target, err := os.Readlink("/proc/self/fd/" + name)
		if err == nil {
			out[fd] = target
		}
	}
	return out
}

// runtimeFD reports the network poller's descriptors, which the runtime
// opens on first use and keeps.
func runtimeFD(target string) bool {
	return target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]"
}

// shmFiles lists this process's gccl files in ShmDir ("gccl-<pid>-...").
func shmFiles() []string {
	ents, err := os.ReadDir(ShmDir)
	if err != nil {
		return nil
	}
	mine := "gccl-" + strconv.Itoa(os.Getpid()) + "-"
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), mine) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// driverFD reports whether target is one the CUDA driver keeps for the life
// of the process once loaded (on a GPU machine): its device nodes, and,
// when those are open, its pipes, sockets and anonymous inodes (CUDA IPC
// left a socket open after internal/regcache's GPU test on an H100). On a
// machine without a GPU nothing is exempt.
func driverFD(target string, driverLoaded bool) bool {
	if strings.HasPrefix(target, "/dev/nvidia") {
		return true
	}
	return driverLoaded && (strings.HasPrefix(target, "pipe:") || strings.HasPrefix(target, "socket:") || strings.HasPrefix(target, "anon_inode:"))
}
