package fault

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/gccltest"
)

// NewComms creates an n-rank blocking host communicator in this process,
// one goroutine per rank, with the given deadline. On failure it aborts the
// ranks that were made.
func NewComms(n int, timeout time.Duration, name string) ([]*comm.Comm, error) {
	id, err := comm.NewUniqueID()
	if err != nil {
		return nil, err
	}
	blocking := true
	cfg := &comm.Config{Backend: device.Host, Timeout: timeout, Blocking: &blocking, Name: name}
	comms, errs := gccltest.Parallel(n, func(r int) (*comm.Comm, error) { return comm.InitRankConfig(n, id, r, cfg) })
	if err := errors.Join(errs...); err != nil {
		for _, c := range comms {
			_ = c.Abort()
		}
		return nil, err
	}
	return comms, nil
}

// Resources counts what a leak would leave behind: goroutines, open file
// descriptors and this process's gccl files in /dev/shm (other processes'
// files are not counted, so concurrent test processes do not interfere).
//
// The first comm.NewUniqueID of a process starts its bootstrap root
// listener (one goroutine, one socket), which lives as long as the process:
// take the "before" count after one.
type Resources struct{ Goroutines, FDs, Shm int }

func (r Resources) String() string {
	return fmt.Sprintf("goroutines=%d fds=%d shm=%d", r.Goroutines, r.FDs, r.Shm)
}

// CountResources counts this process's resources now.
func CountResources() (Resources, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return Resources{}, err
	}
	shm, err := os.ReadDir("/dev/shm")
	if err != nil {
		return Resources{}, err
	}
	n, mine := 0, fmt.Sprintf("gccl-%d-", os.Getpid())
	for _, e := range shm {
		if strings.HasPrefix(e.Name(), mine) {
			n++
		}
	}
	// ReadDir's own descriptor is closed again when it returns.
	return Resources{Goroutines: runtime.NumGoroutine(), FDs: len(fds), Shm: n}, nil
}

// Settle waits up to wait for the counts to come back to before (goroutines
// end asynchronously after a Close) and returns the last count; the error
// lists both counts and every goroutine's stack when they did not.
func Settle(before Resources, wait time.Duration) (Resources, error) {
	deadline := time.Now().Add(wait)
	for {
		now, err := CountResources()
		if err != nil {
			return now, err
		}
		if now.Goroutines <= before.Goroutines && now.FDs <= before.FDs && now.Shm <= before.Shm {
			return now, nil
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			return now, fmt.Errorf("resources leaked: before %v, after %v\n%s", before, now, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
