package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stateFile lists a bed's holders and their namespaces' inodes:
// "switch PID NET UTS" and "host I NAME ADDR PID NET UTS".
const stateFile = "hosts"

// writeState records the holders started so far (atomically).
func (b *Bed) writeState() error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "switch %d %d %d\n", b.sw.pid, b.sw.net, b.sw.uts)
	for _, h := range b.hosts {
		fmt.Fprintf(&sb, "host %d %s %v %d %d %d\n", h.Index, h.Name, h.Addr, h.Pid, h.h.net, h.h.uts)
	}
	if b.gw.IsValid() {
		fmt.Fprintf(&sb, "gateway %v\n", b.gw)
	}
	tmp := filepath.Join(b.dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, []byte(sb.String()), 0o644); err != nil {
		return fmt.Errorf("testbed: recording the bed: %w", err)
	}
	return os.Rename(tmp, filepath.Join(b.dir, stateFile))
}

// nsPair is the inodes of one holder's network and UTS namespaces.
type nsPair struct{ net, uts uint64 }

// readState returns the hosts a bed's directory lists, and the namespaces
// of every holder, the switch's first; and the gateway's address, if any.
func readState(dir string) (hosts []*Host, nss []nsPair, gw netip.Prefix, err error) {
	f, err := os.Open(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, nil, gw, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) == 2 && fl[0] == "gateway" {
			if gw, err = netip.ParsePrefix(fl[1]); err != nil {
				return nil, nil, gw, fmt.Errorf("testbed: %s: %w", filepath.Join(dir, stateFile), err)
			}
			continue
		}
		var ns nsPair
		if len(fl) >= 3 {
			ns.net, _ = strconv.ParseUint(fl[len(fl)-2], 10, 64)
			ns.uts, _ = strconv.ParseUint(fl[len(fl)-1], 10, 64)
			nss = append(nss, ns)
		}
		switch {
		case len(fl) == 4 && fl[0] == "switch":
		case len(fl) == 7 && fl[0] == "host":
			h := &Host{Name: fl[2]}
			h.Index, err = strconv.Atoi(fl[1])
			if err == nil {
				h.Addr, err = netip.ParseAddr(fl[3])
			}
			if err == nil {
				h.Pid, err = strconv.Atoi(fl[4])
			}
			hosts = append(hosts, h)
		default:
			err = fmt.Errorf("bad line %q", sc.Text())
		}
		if err != nil {
			return nil, nil, gw, fmt.Errorf("testbed: %s: %w", filepath.Join(dir, stateFile), err)
		}
	}
	return hosts, nss, gw, sc.Err()
}

// ownerAlive reports whether the process that made the bed in dir still
// runs (the same process: pid and start time).
func ownerAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "owner"))
	if err != nil {
		return false
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscan(string(b), &pid, &start); err != nil {
		return false
	}
	return procStart(pid) == start && start != 0
}

// CleanStale removes the beds under stateDir whose creator is dead: it
// kills every process still in their namespaces and their holders, and
// removes their directories. New calls it; so may a script.
func CleanStale(stateDir string) error {
	ents, err := os.ReadDir(stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("testbed: reading %s: %w", stateDir, err)
	}
	for _, e := range ents {
		dir := filepath.Join(stateDir, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "bed-") || ownerAlive(dir) {
			continue
		}
		hosts, nss, _, _ := readState(dir)
		var holders []int
		for _, h := range hosts {
			if isHolder(h.Pid) {
				holders = append(holders, h.Pid)
			}
		}
		// Every process still in one of the bed's namespace pairs (both
		// inodes must match: a freed inode number may be reused), holders
		// included; the switch's holder is found the same way.
		killed := killInNS(nss)
		waitGone(killed, 5*time.Second)
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("testbed: removing a crashed bed: %w", err)
		}
		fmt.Fprintf(os.Stderr, "testbed: removed a bed left by a crashed run (%s, %d processes)\n", dir, len(killed))
	}
	return nil
}

// Attach returns the live bed recorded in dir (Bed.Dir), for a process
// its creator started (cmd/gccl-bed with, then run or mpirun). Start and
// Launch work as on the creator's bed; Close kills what this process
// started and leaves the bed to its creator.
func Attach(dir string) (*Bed, error) {
	if !ownerAlive(dir) {
		return nil, fmt.Errorf("testbed: no live bed in %q (its creator has exited)", dir)
	}
	hosts, _, gw, err := readState(dir)
	if err != nil {
		return nil, err
	}
	b := &Bed{dir: dir, attached: true, gw: gw}
	for _, h := range hosts {
		if !isHolder(h.Pid) {
			b.Close()
			return nil, fmt.Errorf("testbed: host %s of %s is gone (holder %d)", h.Name, dir, h.Pid)
		}
		h.h = &holder{pid: h.Pid, nsPair: nsOf(h.Pid)}
		if h.h.ns, err = openNS(strconv.Itoa(h.Pid)); err != nil {
			b.Close()
			return nil, fmt.Errorf("testbed: host %s: %w", h.Name, err)
		}
		b.hosts = append(b.hosts, h)
	}
	return b, nil
}

// Exec replaces this process with argv run inside host h (a host of
// Attach): the calling thread enters h's namespaces and execs. It returns
// only on failure.
func Exec(h *Host, argv []string, env []string) error {
	if len(argv) == 0 {
		return errors.New("testbed: no command to run")
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return err
		}
		path = p
	}
	ns, err := openNS(strconv.Itoa(h.Pid))
	if err != nil {
		return fmt.Errorf("testbed: host %s: %w", h.Name, err)
	}
	runtime.LockOSThread() // never unlocked: the thread execs or the process fails
	if err := ns.enter(); err != nil {
		return fmt.Errorf("testbed: host %s: %w", h.Name, err)
	}
	return fmt.Errorf("testbed: running %s in host %s: %w", path, h.Name, syscall.Exec(path, argv, env))
}
