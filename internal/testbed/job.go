package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The environment of a rank that Launch starts.
const (
	EnvRank   = "GCCL_BED_RANK"    // its rank
	EnvNRanks = "GCCL_BED_NRANKS"  // the job's ranks
	EnvHost   = "GCCL_BED_HOST"    // the index of its host
	EnvLocal  = "GCCL_BED_LOCAL"   // its rank among its host's ranks
	EnvIDFile = "GCCL_BED_ID_FILE" // where rank 0 writes the unique ID
	EnvDir    = "GCCL_BED"         // the bed's state directory (Attach)
)

// Job is the rank processes of one Launch.
type Job struct {
	b      *Bed
	cmds   []*exec.Cmd
	hostOf []int
	exited []chan error
}

var jobSeq struct {
	sync.Mutex
	n int
}

// Launch starts perHost ranks of argv (plus env) in every host, rank r on
// host r/perHost, each told its place by EnvRank and the others; their
// output goes to out, each line prefixed with the rank and host.
func (b *Bed) Launch(perHost int, argv, env []string, out io.Writer) (*Job, error) {
	if perHost < 1 || len(argv) == 0 {
		return nil, fmt.Errorf("testbed: Launch needs at least one rank per host and a command")
	}
	jobSeq.Lock()
	jobSeq.n++
	idFile := filepath.Join(b.dir, fmt.Sprintf("job-%d.id", jobSeq.n))
	jobSeq.Unlock()
	n := perHost * len(b.hosts)
	j := &Job{b: b}
	var mu sync.Mutex
	for r := range n {
		host := r / perHost
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(append(os.Environ(), env...),
			EnvRank+"="+strconv.Itoa(r), EnvNRanks+"="+strconv.Itoa(n), EnvHost+"="+strconv.Itoa(host),
			EnvLocal+"="+strconv.Itoa(r%perHost), EnvIDFile+"="+idFile, EnvDir+"="+b.dir)
		w := &prefixWriter{mu: &mu, out: out, prefix: fmt.Sprintf("[rank %d %s] ", r, b.hosts[host].Name)}
		cmd.Stdout, cmd.Stderr = w, w
		cmd.WaitDelay = 5 * time.Second // a child holding the rank's output open does not hold Wait
		if err := b.Start(host, cmd); err != nil {
			j.Kill()
			return nil, err
		}
		done := make(chan error, 1)
		go func() {
			err := cmd.Wait()
			w.flush()
			done <- err
		}()
		j.cmds, j.hostOf, j.exited = append(j.cmds, cmd), append(j.hostOf, host), append(j.exited, done)
	}
	return j, nil
}

// Kill sends SIGKILL to every rank still running.
func (j *Job) Kill() {
	for _, c := range j.cmds {
		_ = c.Process.Signal(syscall.SIGKILL)
	}
}

// Wait waits up to timeout for every rank and returns each rank's result
// (nil: exit status 0). Ranks still running then are killed, and their
// result says so.
func (j *Job) Wait(timeout time.Duration) []error {
	errs := make([]error, len(j.cmds))
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	hung := false
	for r, done := range j.exited {
		if !hung {
			select {
			case err := <-done:
				errs[r] = j.rankErr(r, err)
				continue
			case <-deadline.C:
				hung = true
				j.Kill()
			}
		}
		err := <-done // killed: it ends at once
		if ws, ok := j.cmds[r].ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			err = fmt.Errorf("still running after %v: killed (a hang)", timeout)
		}
		errs[r] = j.rankErr(r, err)
	}
	return errs
}

func (j *Job) rankErr(r int, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("rank %d (host %s): %w", r, j.b.hosts[j.hostOf[r]].Name, err)
}

// Failed joins the errors of Wait's result (nil when every rank passed).
func Failed(errs []error) error { return errors.Join(errs...) }

// prefixWriter writes whole lines to out, each with a prefix.
type prefixWriter struct {
	mu     *sync.Mutex
	out    io.Writer
	prefix string
	buf    []byte
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		_, _ = fmt.Fprintf(w.out, "%s%s\n", w.prefix, w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *prefixWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		_, _ = fmt.Fprintf(w.out, "%s%s\n", w.prefix, w.buf)
		w.buf = nil
	}
}
