// Package futex is a sequence counter in shared memory that one process
// advances and others wait on: a waiter polls, yields, then sleeps on a
// Linux futex that the advancing process wakes, so that a wait costs no
// CPU for long and an advance costs no system call when nobody sleeps.
// The host backend's zero-copy barriers are made of them.
package futex

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/gccl/gccl/internal/env"
)

// Linux futex operations on shared (not process-private) words, so that a
// waiter in one process is woken by a store in another.
const (
	futexWait = 0
	futexWake = 1
)

// futexSleep blocks while *addr == val, for at most d (or until woken).
// Spurious and early returns are fine: callers re-check their condition.
func futexSleep(addr *uint32, val uint32, d time.Duration) {
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWakeAll wakes every waiter blocked on addr.
func futexWakeAll(addr *uint32) {
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}

// Sleep blocks the calling thread while *addr == val, for at most d or
// until WakeAll(addr), with the kernel's timer precision (tens of
// microseconds of slack), where Go's timers round sleeps shorter than a
// millisecond up to about one on Linux. Spurious and early returns happen:
// callers re-check their condition.
func Sleep(addr *uint32, val uint32, d time.Duration) { futexSleep(addr, val, d) }

// WakeAll wakes every Sleep on addr.
func WakeAll(addr *uint32) { futexWakeAll(addr) }

// Waiting schedule of a counter wait: busy polls (another core may be about
// to store) for at least spinPolls polls and for the spin time (SetSpin),
// then a few yields of the OS thread to other processes, then futex sleeps
// that end early on a wake-up, at most futexNap long so that deadlines,
// Abort and dead peers are noticed promptly. Polling longer costs a core
// while it waits but saves the sleeper's wake-up (tens of microseconds):
// worth it where every rank has a core of its own.
const (
	spinPolls  = 256
	checkEvery = 64 // polls between two checks (and clock reads)
	yieldPolls = 4
	futexNap   = 2 * time.Millisecond
	// AutoSpin is the spin time on machines with at least autoSpinCPUs
	// CPUs when GCCL_HOST_SPIN is auto.
	AutoSpin     = 50 * time.Microsecond
	autoSpinCPUs = 4
)

// spin is the spin time in nanoseconds, -1 until SetSpin or the first wait
// reads GCCL_HOST_SPIN.
var spin atomic.Int64

func init() { spin.Store(-1) }

// SetSpin sets how long every wait of this process busy-polls before it
// yields and sleeps; a negative d means auto (AutoSpin on machines with
// at least 4 CPUs, else none beyond the first few hundred polls). Without
// a call the first wait reads GCCL_HOST_SPIN.
func SetSpin(d time.Duration) { spin.Store(int64(resolveSpin(d))) }

// resolveSpin is the spin time a setting d means (negative: auto).
func resolveSpin(d time.Duration) time.Duration {
	switch {
	case d >= 0:
		return d
	case runtime.NumCPU() >= autoSpinCPUs:
		return AutoSpin
	}
	return 0
}

// ShareCPUs tells this process's waits that n ranks of a communicator run
// on this host. When GCCL_HOST_SPIN is auto and they outnumber the CPUs,
// waits stop spinning beyond the first polls, for the life of the
// process: a spinning rank would take the CPU from the peer it waits for.
// When they are more than half the CPUs, host streams stop spinning
// (StreamSpinTime).
func ShareCPUs(n int) {
	if env.Get().HostSpin >= 0 {
		return
	}
	if n > runtime.NumCPU() {
		spin.Store(0)
	}
	if 2*n > runtime.NumCPU() {
		crowded.Store(true)
	}
}

// crowded is set by ShareCPUs: two spinning threads per rank would
// outnumber the CPUs.
var crowded atomic.Bool

// StreamSpinTime is how long a host stream's worker polls for work and a
// Synchronize polls before sleeping: SpinTime, but none where
// GCCL_HOST_SPIN is auto and a communicator's ranks on this host are more
// than half its CPUs, since a rank's stream worker and its caller then
// spin beside the rank's own waits (two threads a rank).
func StreamSpinTime() time.Duration {
	if crowded.Load() {
		return 0
	}
	return SpinTime()
}

// SpinTime is how long a wait of this process busy-polls before it
// sleeps (GCCL_HOST_SPIN, SetSpin, ShareCPUs), read from the environment
// on first use unless SetSpin or ShareCPUs has set it meanwhile. Waits
// elsewhere (host streams) that spin follow it.
func SpinTime() time.Duration {
	ns := spin.Load()
	if ns < 0 {
		spin.CompareAndSwap(-1, int64(resolveSpin(env.Get().HostSpin)))
		ns = spin.Load()
	}
	return time.Duration(ns)
}

// Counter is a 32-bit sequence number in shared memory that one process
// advances and others wait on, with a count of sleeping waiters next to it
// (on its own cache line) so that advancing costs no system call when
// nobody sleeps.
type Counter struct {
	Seq     *uint32
	Waiters *uint32
}

// Reached reports whether a counter value v is at or past target (wrap-safe).
func Reached(v, target uint32) bool { return int32(v-target) >= 0 }

// Advance stores v and wakes the sleepers.
func (c Counter) Advance(v uint32) {
	atomic.StoreUint32(c.Seq, v)
	if atomic.LoadUint32(c.Waiters) != 0 {
		futexWakeAll(c.Seq)
	}
}

// Await waits until the counter reaches target. check runs between sleeps
// (and every checkEvery polls) and ends the wait with its error.
func (c Counter) Await(target uint32, check func() error) error {
	spinFor, polling := SpinTime(), true
	var began time.Time
	for i := 0; ; i++ {
		v := atomic.LoadUint32(c.Seq)
		if Reached(v, target) {
			return nil
		}
		if polling {
			if i%checkEvery != checkEvery-1 {
				continue
			}
			if err := check(); err != nil {
				return err
			}
			if i < spinPolls {
				continue
			}
			if began.IsZero() {
				began = time.Now()
			}
			if time.Since(began) < spinFor {
				// Let a goroutine this one just readied run: a new
				// goroutine waits in its creator's P (runnext), where
				// other Ps do not steal it at once.
				runtime.Gosched()
				continue
			}
			polling, i = false, -1 // i counts the yields from here
			continue
		}
		if i < yieldPolls {
			osYield()
			continue
		}
		if err := check(); err != nil {
			return err
		}
		atomic.AddUint32(c.Waiters, 1)
		if v = atomic.LoadUint32(c.Seq); !Reached(v, target) {
			futexSleep(c.Seq, v, futexNap)
		}
		atomic.AddUint32(c.Waiters, ^uint32(0))
	}
}

// osYield gives the CPU to another runnable thread of any process.
func osYield() {
	_, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
	runtime.Gosched()
}
