package host

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

// counter is a 32-bit sequence number in shared memory that one process
// advances and others wait on, with a count of sleeping waiters next to it
// (on its own cache line) so that advancing costs no system call when
// nobody sleeps.
type counter struct {
	seq     *uint32
	waiters *uint32
}

// reached reports whether the counter is at or past target (wrap-safe).
func reached(v, target uint32) bool { return int32(v-target) >= 0 }

// advance stores v and wakes the sleepers.
func (c counter) advance(v uint32) {
	atomic.StoreUint32(c.seq, v)
	if atomic.LoadUint32(c.waiters) != 0 {
		futexWakeAll(c.seq)
	}
}

// await waits until the counter reaches target. check runs between sleeps
// (and every few polls) and ends the wait with its error.
func (c counter) await(target uint32, check func() error) error {
	for i := 0; ; i++ {
		v := atomic.LoadUint32(c.seq)
		if reached(v, target) {
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
		atomic.AddUint32(c.waiters, 1)
		if v = atomic.LoadUint32(c.seq); !reached(v, target) {
			futexSleep(c.seq, v, futexNap)
		}
		atomic.AddUint32(c.waiters, ^uint32(0))
	}
}

// osYield gives the CPU to another runnable thread of any process.
func osYield() {
	_, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
	runtime.Gosched()
}
