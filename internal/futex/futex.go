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

// Waiting schedule of a counter wait: a few busy polls (another core may be
// about to store), then a few yields of the OS thread to other processes,
// then futex sleeps that end early on a wake-up, at most futexNap long so
// that deadlines, Abort and dead peers are noticed promptly.
const (
	spinPolls  = 200
	yieldPolls = 4
	futexNap   = 2 * time.Millisecond
)

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
// (and every few polls) and ends the wait with its error.
func (c Counter) Await(target uint32, check func() error) error {
	for i := 0; ; i++ {
		v := atomic.LoadUint32(c.Seq)
		if Reached(v, target) {
			return nil
		}
		switch {
		case i < spinPolls:
			if i%64 == 63 {
				if err := check(); err != nil {
					return err
				}
			}
			continue
		case i < spinPolls+yieldPolls:
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
