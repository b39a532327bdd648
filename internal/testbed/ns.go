package testbed

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// setns moves the calling thread into the namespace open at f.
func setns(f *os.File, nstype int) error {
	if sysSetns == 0 {
		return fmt.Errorf("setns: not supported on %s", runtime.GOARCH)
	}
	if _, _, e := syscall.RawSyscall(sysSetns, f.Fd(), uintptr(nstype), 0); e != 0 {
		return fmt.Errorf("setns: %w", e)
	}
	return nil
}

// nsFiles are the network and UTS namespaces of one process.
type nsFiles struct{ net, uts *os.File }

// openNS opens the namespaces of process pid ("thread-self" for the
// calling thread).
func openNS(pid string) (nsFiles, error) {
	net, err := os.Open("/proc/" + pid + "/ns/net")
	if err != nil {
		return nsFiles{}, err
	}
	uts, err := os.Open("/proc/" + pid + "/ns/uts")
	if err != nil {
		net.Close()
		return nsFiles{}, err
	}
	return nsFiles{net, uts}, nil
}

func (n nsFiles) Close() {
	if n.net != nil {
		n.net.Close()
	}
	if n.uts != nil {
		n.uts.Close()
	}
}

// enter moves the calling thread into both namespaces.
func (n nsFiles) enter() error {
	if err := setns(n.net, syscall.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering the network namespace: %w", err)
	}
	if err := setns(n.uts, syscall.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("entering the UTS namespace: %w", err)
	}
	return nil
}

// inNS runs fn on an OS thread moved into ns, then moves the thread back.
// A thread that cannot be moved back is never reused: its goroutine ends
// still locked to it, and the Go runtime destroys it.
func inNS(ns nsFiles, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := openNS("thread-self")
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("opening this thread's namespaces: %w", err)
			return
		}
		defer home.Close()
		err = ns.enter()
		if err == nil {
			err = fn()
		}
		if rerr := home.enter(); rerr != nil {
			done <- errors.Join(err, fmt.Errorf("returning to the test's namespaces: %w", rerr))
			return // still locked: the thread dies with this goroutine
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// nsOf returns the inodes of process pid's network and UTS namespaces,
// zeros when the process is gone.
func nsOf(pid int) nsPair {
	var p nsPair
	var st syscall.Stat_t
	dir := "/proc/" + strconv.Itoa(pid) + "/ns/"
	if syscall.Stat(dir+"net", &st) == nil {
		p.net = st.Ino
	}
	if syscall.Stat(dir+"uts", &st) == nil {
		p.uts = st.Ino
	}
	return p
}

// procStart returns process pid's start time (clock ticks after boot),
// which tells a live process from a later one that reused its pid; 0 when
// there is no such process.
func procStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64) // field 22 of stat; f[0] is field 3
	return v
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// isHolder reports whether pid is a holder process of some bed.
func isHolder(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.HasPrefix(string(b), holderArg0+"\x00")
}

// killInNS sends SIGKILL to every process (but this one) whose network
// and UTS namespaces are one of nss, and returns their pids.
func killInNS(nss []nsPair) []int {
	want := map[nsPair]bool{}
	for _, p := range nss {
		if p.net != 0 && p.uts != 0 {
			want[p] = true
		}
	}
	ents, _ := os.ReadDir("/proc")
	var killed []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !want[nsOf(pid)] {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}
