package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/test/fault"
)

// stop runs -fault stop on this rank: the workload over and over, the
// victim stopping itself during operation -series. A survivor runs until
// an operation fails and judges that failure (namesVictim); one that
// finishes -series+10 operations never noticed the stall. The victim, once
// resumed, reports what its stopped operation returned, for the log only.
func stop(c *comm.Comm, b *fault.Bufs, w fault.Workload, rank, v int) (string, error) {
	for i := 0; ; i++ {
		start := time.Now()
		err := w.Launch(c, b, *count)
		if err == nil && rank == v && i == *series {
			return stopSelf(c, b)
		}
		if err == nil {
			err = b.Dev.Synchronize(b.S)
		}
		switch {
		case err != nil && rank == v:
			return "", fmt.Errorf("operation %d, before stopping: %w", i, err)
		case err != nil:
			return survive(c, start, err, namesVictim(v))
		case i == *series+10:
			return "", fmt.Errorf("operations 0-%d succeeded: rank %d stopped during operation %d, yet nothing waited for it", i, v, *series)
		}
	}
}

// stopSelf writes this process's pid to -out/stopped (whole, by a
// rename), then stops it with SIGSTOP until scripts/fault.sh sends
// SIGCONT, and describes how long it was stopped and what the operation
// in flight then returned.
func stopSelf(c *comm.Comm, b *fault.Bufs) (string, error) {
	time.Sleep(*delay)
	tmp, path := filepath.Join(*outDir, "stopped.tmp"), filepath.Join(*outDir, "stopped")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	// SIGSTOP sent to the process may be taken by another thread while this
	// one runs on: on a busy machine far enough to abort the communicator,
	// or exit, before the process stops. Sent to this thread, it stops the
	// process before the call returns.
	runtime.LockOSThread()
	stopped := time.Now()
	err := syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
	resumed := time.Now()
	runtime.UnlockOSThread()
	if err != nil {
		return "", fmt.Errorf("SIGSTOP: %w", err)
	}
	err = b.Dev.Synchronize(b.S)
	abortErr := c.Abort()
	return fmt.Sprintf("resumed after %v: class=%q abort=%v err=%v", resumed.Sub(stopped).Round(time.Millisecond),
		gccl.Code(err), abortErr, err), nil
}

// namesVictim judges a survivor's failure under -fault stop: the
// operation and AsyncError must be gccl.ErrTimeout naming rank v, and
// only it, as the rank that made no progress.
func namesVictim(v int) func(err, async error) string {
	want := fmt.Sprintf("rank %d", v)
	return func(err, async error) string {
		switch {
		case gccl.Code(err) != gccl.TimeoutError:
			return "not a timeout"
		case fault.Blamed(err) != want:
			return fmt.Sprintf("blames %q, not %q", fault.Blamed(err), want)
		case gccl.Code(async) != gccl.TimeoutError:
			return "AsyncError is not a timeout"
		case fault.Blamed(async) != want:
			return fmt.Sprintf("AsyncError blames %q, not %q", fault.Blamed(async), want)
		}
		return ""
	}
}
