package proxy

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/internal/futex"
)

// running counts the proxy goroutines of this process: the one figure the
// proxies share, to tell whether they could hold every P (crowded).
var running atomic.Int32

// crowdCheck is how often a proxy re-reads whether it is crowded.
const crowdCheck = int64(time.Millisecond)

// waiter is how the goroutine waits between passes. Uncrowded (at most
// half as many proxies as Ps) it spins, yielding with runtime.Gosched, and sleeps on
// a futex: precise, but both keep the P, which is harmless while other
// Ps are idle and poll the network. Crowded, it gives its P back at every
// pause (a Go timer), so that the network poller, which wakes the
// providers' goroutines, runs: Go rounds such sleeps under a millisecond
// up to about one when the process is otherwise idle.
type waiter struct {
	p       *Proxy
	crowded bool
	checked int64 // when crowded was last computed (ns since epoch)
	timer   *time.Timer
	idle    int // yields so far
}

func newWaiter(p *Proxy) *waiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{p: p, checked: -crowdCheck - 1, timer: t}
}

// check recomputes crowded once per crowdCheck.
func (w *waiter) check(now int64) {
	if now-w.checked > crowdCheck {
		w.crowded, w.checked = 2*int(running.Load()) > runtime.GOMAXPROCS(0), now
	}
}

// yield pauses a hot pass that moved nothing: runtime.Gosched, and when
// crowded a timer sleep every 8th time, which lets the network poller run
// (Gosched alone does not: the yielded goroutine is found first) without
// sleeping at every pass (8 was the best of 2, 8, 32 and 128 in
// BenchmarkThroughput and BenchmarkPingPong on a 2-CPU machine).
func (w *waiter) yield() {
	w.idle++
	if w.crowded && w.idle%8 == 0 {
		w.sleep(0, MinSleep)
		return
	}
	runtime.Gosched()
}

// sleep sleeps for d at most, or until the bell moves past bell (Kick,
// add, Close).
func (w *waiter) sleep(bell uint32, d time.Duration) {
	p := w.p
	if !w.crowded {
		p.sleeping.Store(true)
		futex.Sleep(&p.bell, bell, d)
		p.sleeping.Store(false)
		runtime.Gosched() // the sleep kept this P: let what it queued run
		return
	}
	w.timer.Reset(d)
	select {
	case <-w.timer.C:
	case <-p.wake:
		w.timer.Stop()
	case <-p.quit:
		w.timer.Stop()
	}
}
