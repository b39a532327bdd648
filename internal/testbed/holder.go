package testbed

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

const (
	// holderArg0 is a holder's argv[0]: how a later run recognises the
	// holders a crashed run left behind.
	holderArg0 = "gccl-testbed-holder"
	// holderEnv, set to a host name, turns a process into a holder (init).
	holderEnv = "GCCL_BED_HOLDER"
	// holderStart bounds a holder's start.
	holderStart = 10 * time.Second
)

// A program that imports testbed becomes a holder when started with
// GCCL_BED_HOLDER set: startHolder runs the program's own executable in
// new network and UTS namespaces, and it sets its host name, brings its
// loopback up, says "ready" and then holds the namespaces until its
// standard input closes (its creator closed the bed or died).
func init() {
	name, ok := os.LookupEnv(holderEnv)
	if !ok || len(os.Args) == 0 || os.Args[0] != holderArg0 {
		return
	}
	if err := holderSetup(name); err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the creator closes it or dies
	os.Exit(0)
}

func holderSetup(name string) error {
	if err := syscall.Sethostname([]byte(name)); err != nil {
		return fmt.Errorf("setting the host name %q: %w", name, err)
	}
	nl, err := openRTNL()
	if err != nil {
		return err
	}
	defer nl.Close()
	return nl.up("lo", "")
}

// holder is a running holder process: its namespaces live as long as it.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ns    nsFiles
	pid   int
	nsPair
}

// startHolder starts a holder of new network and UTS namespaces with host
// name name.
func startHolder(name string) (*holder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start a namespace holder: %w", err)
	}
	cmd := exec.Command(exe, name)
	cmd.Args[0] = holderArg0
	cmd.Env = append(os.Environ(), holderEnv+"="+name)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWUTS,
		Pdeathsig:  syscall.SIGKILL,
		Setpgid:    true, // a Ctrl-C reaches the creator, which tears the bed down in order
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		if os.IsPermission(err) || err == syscall.EPERM {
			return nil, fmt.Errorf("%w: creating network and UTS namespaces needs root or CAP_SYS_ADMIN (%v); run as root", ErrNoNamespaces, err)
		}
		return nil, fmt.Errorf("%w: starting a namespace holder: %v", ErrNoNamespaces, err)
	}
	h := &holder{cmd: cmd, stdin: stdin, pid: cmd.Process.Pid}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		if s != "ready" {
			h.stop()
			return nil, fmt.Errorf("namespace holder %s failed: %q", name, strings.TrimPrefix(s, "error "))
		}
	case <-time.After(holderStart):
		h.stop()
		return nil, fmt.Errorf("namespace holder %s not ready after %v", name, holderStart)
	}
	h.nsPair = nsOf(h.pid)
	if h.ns, err = openNS(fmt.Sprint(h.pid)); err != nil {
		h.stop()
		return nil, fmt.Errorf("opening the namespaces of holder %s: %w", name, err)
	}
	return h, nil
}

// stop ends the holder: its standard input closes, and it is killed if it
// has not exited within a second. Its namespaces go when their last
// process does.
func (h *holder) stop() {
	if h == nil {
		return
	}
	h.ns.Close()
	h.ns = nsFiles{}
	if h.cmd == nil {
		return // attached: the creator's
	}
	_ = h.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(time.Second):
		_ = h.cmd.Process.Kill()
		<-exited
	}
	h.cmd = nil
}
