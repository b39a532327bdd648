package ucx

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
)

// Worker is a UCP worker (ucp_worker_h): one progress engine. Its calls,
// and those of its endpoints and requests, are serialised by its mutex
// (the worker is created UCS_THREAD_MODE_SERIALIZED); it makes progress
// only when called: in Progress, in every Request.Test, and in Wait,
// which sleeps on the worker's event fd in between.
type Worker struct {
	mu      sync.Mutex
	h       uintptr
	ctx     *Context
	orphans []*Request   // released before they completed: pinned until Close
	hurry   atomic.Int64 // Hurry's bound on every wait (Unix ns), 0 for none
	// The Waits asleep in Go's netpoller, each on its own dup of the
	// event fd (made by its first Wait, mu held).
	sleepers [netpollSleepers]sleeper
}

// netpollSleepers is how many Waits of a worker sleep in Go's netpoller
// at once: a connection's progress goroutine and a waiter of one of its
// requests (see Wait).
const netpollSleepers = 2

// sleeper is a place for a Wait in Go's netpoller.
type sleeper struct {
	held   sync.Mutex // by the Wait asleep on events
	events *os.File   // a dup of the event fd in the netpoller
}

// NewWorker creates a worker of c.
func (c *Context) NewWorker() (*Worker, error) {
	h, s := cWorkerCreate(c.h)
	if err := check("ucp_worker_create", s); err != nil {
		return nil, err
	}
	return &Worker{h: h, ctx: c}, nil
}

// Close destroys the worker (ucp_worker_destroy) and its endpoints; its
// requests must have been released.
//
// UCX must not destroy a worker whose endpoints still have requests or
// wire-up messages in flight that it does not own (builds with
// assertions, Debian's among them, abort the process), so Close first
// progresses the worker until the requests released before they
// completed are done (cancelled receives, sends of force-closed
// endpoints, closes) and flushes the worker, for up to DrainTimeout in
// all (a dead peer's endpoints fail sooner). What is still pending then
// (a flushing close or flush towards a peer behind a cut link) is handed
// to UCX with ucp_request_free before the worker goes: the destroy
// completes it, and UCX 1.13 asserts that every request it completes
// there was freed by its user (ucp_ep.c:382, "req->flags &
// UCP_REQUEST_FLAG_RELEASED", on a close's flush). Go memory those
// requests use stays pinned until the worker is gone. A worker flush
// waits only for the interfaces' outstanding sends, not for a wire-up
// reply queued on a connection still being established: the wire-up
// itself is made complete when an endpoint is created (see
// Endpoint.Flush), not here.
func (w *Worker) Close() {
	if w == nil {
		return
	}
	deadline := w.bound(time.Now().Add(DrainTimeout))
	w.drainUntil(deadline)
	_ = w.Flush(time.Until(deadline))
	w.drainUntil(deadline)
	// Without the lock: File.Close waits for a Wait asleep on it to
	// return, and that Wait may be about to take the lock.
	for _, f := range w.destroy() {
		if f != nil {
			f.Close()
		}
	}
}

// destroy destroys the worker (lock not held); it returns the event fd's
// dups for the caller to close.
func (w *Worker) destroy() []*os.File {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == 0 {
		return nil
	}
	for _, r := range w.orphans {
		r.handBack()
	}
	cWorkerDestroy(w.h)
	w.h = 0
	for _, r := range w.orphans {
		r.finish()
	}
	w.orphans = nil
	events := make([]*os.File, len(w.sleepers))
	for i := range w.sleepers {
		events[i], w.sleepers[i].events = w.sleepers[i].events, nil
	}
	return events
}

// drainUntil progresses the worker, sleeping on its events, until the
// released requests are done or deadline passes.
func (w *Worker) drainUntil(deadline time.Time) {
	for w.drain() && time.Now().Before(w.bound(deadline)) {
		_ = w.Wait(min(time.Until(deadline), 10*time.Millisecond))
	}
}

// Flush waits up to d, progressing the worker, until its interfaces have
// nothing in flight (ucp_worker_flush_nbx; its endpoints too where they
// still do, those UCX made for peers' wire-up included).
func (w *Worker) Flush(d time.Duration) error {
	w.mu.Lock()
	if w.h == 0 {
		w.mu.Unlock()
		return nil
	}
	req, s := cWorkerFlush(w.h)
	w.mu.Unlock()
	if err := check("ucp_worker_flush_nbx", s); err != nil || req == 0 {
		return err
	}
	r := &Request{w: w, h: req}
	err := r.Wait(d)
	r.Release()
	return err
}

// DrainTimeout bounds how long Close waits for released requests.
const DrainTimeout = 5 * time.Second

// Hurry bounds every wait on w, from now on, to d from now: the flushes
// and closes in progress or to come, and Close's drain. It is for a
// connection that must end without its peer (an abort; a peer behind a cut
// link answers nothing, and a flush towards it never ends): what is still
// pending then is handed back to UCX before the worker is destroyed, as
// after any expired wait (see Close).
func (w *Worker) Hurry(d time.Duration) {
	at := time.Now().Add(d).UnixNano()
	for {
		old := w.hurry.Load()
		if (old != 0 && old <= at) || w.hurry.CompareAndSwap(old, at) {
			break
		}
	}
	_ = w.Signal() // a Wait asleep in poll looks again
}

// bound is deadline, or Hurry's bound where that is sooner.
func (w *Worker) bound(deadline time.Time) time.Time {
	if h := w.hurry.Load(); h != 0 && h < deadline.UnixNano() {
		return time.Unix(0, h)
	}
	return deadline
}

// drain progresses the worker, frees the released requests that are done
// now, and reports whether any is left.
func (w *Worker) drain() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == 0 || len(w.orphans) == 0 {
		return false
	}
	w.progress()
	left := w.orphans[:0]
	for _, r := range w.orphans {
		r.poll()
		if !r.done {
			left = append(left, r)
		}
	}
	w.orphans = left
	return len(left) > 0
}

// Address is the worker's address (ucp_worker_get_address), what a peer
// needs to Connect to it.
func (w *Worker) Address() ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, s := cWorkerAddress(w.h)
	return a, check("ucp_worker_get_address", s)
}

// Progress runs the worker's progress engine until it has nothing left to
// do now.
func (w *Worker) Progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.progress()
}

func (w *Worker) progress() {
	for cProgress(w.h) != 0 {
	}
}

// Wait progresses the worker; if that handled nothing, it sleeps until
// the worker has events (its event fd becomes readable) or d passes,
// whichever is first. Events the progress handled return at once: they
// may have completed what the caller waits for. It does not hold
// the worker while it sleeps, so other goroutines may progress it
// meanwhile; waiters loop on their own condition with their own deadline.
//
// Two Waits at a time sleep in Go's netpoller, each on its own dup of the
// event fd (no thread blocked in C, no wake-up of another thread to take
// over its P; an event wakes both): a connection's progress goroutine and
// the waiter of one of its requests, which an event then wakes itself
// rather than through the progress goroutine. A Wait that finds both
// places taken sleeps in poll(2) (a blocking cgo call) instead, so that
// each sleeps within its own d.
func (w *Worker) Wait(d time.Duration) error { return w.sleep(d, nil) }

// Sleep is Wait for the caller of r, who tested it: it does not sleep
// once r is complete. Another goroutine's progress may complete r
// between the caller's Test and this Wait's; that progress consumed the
// events, so nothing would wake this Wait for it: r is checked once the
// worker is armed, after which a completion needs new events.
func (r *Request) Sleep(d time.Duration) error { return r.w.sleep(d, r) }

// sleep is Wait, not sleeping once r (if not nil) is complete.
func (w *Worker) sleep(d time.Duration, r *Request) error {
	for i := range w.sleepers {
		if w.sleepers[i].held.TryLock() {
			defer w.sleepers[i].held.Unlock()
			return w.netpollWait(i, d, r)
		}
	}
	return w.pollWait(d, r)
}

// netpollWait is sleep in Go's netpoller, in place i (held).
func (w *Worker) netpollWait(i int, d time.Duration, r *Request) error {
	f, err := w.eventFile(i)
	if err != nil {
		return err
	}
	rc, err := f.SyscallConn()
	if err == nil {
		err = f.SetReadDeadline(time.Now().Add(max(d, time.Millisecond)))
	}
	armed := false
	var armErr error
	if err == nil {
		err = rc.Read(func(uintptr) bool {
			if armed {
				return true // readable: events came
			}
			var s Status
			if s, armErr = w.arm(); armErr != nil || s == InProgress || r.completed() {
				return true
			}
			armed = true
			return false // sleep until the fd is readable (or the deadline)
		})
	}
	switch {
	case armErr != nil:
		return armErr
	case err == nil || errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	case w.closed():
		return errWorkerClosed() // Close closed the file under us
	}
	return gccl.Errorf(gccl.SystemError, "ucx worker", "waiting on the event fd: %w", err)
}

func errWorkerClosed() error { return gccl.Errorf(gccl.InvalidUsage, "ucx worker", "closed") }

// closed reports whether Close destroyed the worker.
func (w *Worker) closed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.h == 0
}

// eventFile is place i's dup of the worker's event fd in Go's netpoller
// (non-blocking, edge-triggered there: arm clears what woke it last),
// made on first use; an error once the worker is closed.
func (w *Worker) eventFile(i int) (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == 0 {
		return nil, errWorkerClosed()
	}
	if w.sleepers[i].events == nil {
		fd, s := cEventFd(w.h)
		if err := check("ucp_worker_get_efd", s); err != nil {
			return nil, err
		}
		f, err := pollable(fd)
		if err != nil {
			return nil, gccl.Errorf(gccl.SystemError, "ucx worker", "event fd: %w", err)
		}
		w.sleepers[i].events = f
	}
	return w.sleepers[i].events, nil
}

// arm progresses the worker and arms its events (ucp_worker_arm):
// InProgress when the progress handled events, or events came meanwhile
// (or are still readable), so that the caller must not sleep.
func (w *Worker) arm() (Status, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == 0 {
		return OK, errWorkerClosed()
	}
	_, s := cArm(w.h)
	if s == InProgress {
		return s, nil
	}
	return s, check("ucp_worker_arm", s)
}

// pollWait is sleep in poll(2).
func (w *Worker) pollWait(d time.Duration, r *Request) error {
	w.mu.Lock()
	if w.h == 0 {
		w.mu.Unlock()
		return errWorkerClosed()
	}
	fd, s := cArm(w.h)
	w.mu.Unlock()
	if s == InProgress {
		return nil
	}
	if err := check("ucp_worker_arm", s); err != nil || r.completed() {
		return err
	}
	cPoll(fd, max(1, int(d/time.Millisecond)))
	return nil
}

// Signal wakes a goroutine sleeping in Wait (ucp_worker_signal).
func (w *Worker) Signal() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == 0 {
		return nil
	}
	return check("ucp_worker_signal", cSignal(w.h))
}

// Endpoint is a connection from a worker to a peer's worker (ucp_ep_h),
// created with peer error handling: a failed peer fails its requests
// instead of hanging them.
type Endpoint struct {
	w   *Worker
	h   uintptr // 0 once closed
	ops int     // operations posted on it and not complete (w.mu held)
}

// Connect creates an endpoint to the worker whose address is addr. It does
// not wait: UCX wires the endpoint up as both workers progress, and
// Flush waits for that. Closing the endpoint or destroying either worker
// before the wire-up is complete may abort the process with UCX 1.12 and
// 1.13 builds with assertions (see wireUpAtCreate).
func (w *Worker) Connect(addr []byte) (*Endpoint, error) {
	if len(addr) == 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ucp_ep_create", "empty worker address")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	h, s := cEpCreate(w.h, addr)
	if err := check("ucp_ep_create", s); err != nil {
		return nil, err
	}
	return &Endpoint{w: w, h: h}, nil
}

// Err is the failure UCX reported for the endpoint's peer, or nil.
func (e *Endpoint) Err() error {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.h == 0 {
		return errEndpointClosed("ucp endpoint")
	}
	return check("ucp endpoint", cEpStatus(e.h))
}

func errEndpointClosed(call string) error {
	return gccl.Errorf(gccl.InvalidUsage, call, "the endpoint is closed")
}

// Flush waits up to d, progressing the worker, until everything posted on
// e and its wire-up with the peer are complete (ucp_ep_flush_nbx): for a
// new endpoint, until the peer's wire-up reply has arrived, so that
// nothing of the wire-up is in flight in either direction any more
// (UCX_RESOLVE_REMOTE_EP_ID=y, see wireUpAtCreate; UCX before 1.13 only
// waits so for transports that connect endpoint to endpoint). The peer's
// worker must progress meanwhile.
func (e *Endpoint) Flush(d time.Duration) error {
	e.w.mu.Lock()
	if e.h == 0 {
		e.w.mu.Unlock()
		return errEndpointClosed("ucp_ep_flush_nbx")
	}
	req, s := cEpFlush(e.h)
	e.w.mu.Unlock()
	if err := check("ucp_ep_flush_nbx", s); err != nil || req == 0 {
		return err
	}
	r := &Request{w: e.w, h: req}
	err := r.Wait(d)
	r.Release()
	return err
}

// Close closes the endpoint (ucp_ep_close_nbx), flushing what was sent
// unless force, and waits up to d for it; then it frees the endpoint.
// Safe on nil and twice.
//
// A close is forced when operations posted on e are still pending (the
// caller released them, or will): a flushing close would wait for the
// peer to take them, and if it never does (it died, its link was cut)
// nothing could end them any more: UCX 1.13 cancels a closed endpoint's
// rendezvous sends only when its lanes are discarded (a forced close or
// a transport error), and a worker destroyed with one still listed on an
// endpoint aborts an assertion build (ucp_ep.c:437, "proto_reqs"). A
// forced close completes them with ErrCanceled as the worker progresses.
//
// A close still pending after d is released to the worker like any
// request (Request.Release), which hands it back to UCX before the
// worker is destroyed (Worker.Close).
func (e *Endpoint) Close(force bool, d time.Duration) error {
	if e == nil {
		return nil
	}
	e.w.mu.Lock()
	if e.h == 0 {
		e.w.mu.Unlock()
		return nil
	}
	req, s := cEpClose(e.h, force || e.ops > 0)
	cEpFree(e.h)
	e.h = 0
	e.w.mu.Unlock()
	err := check("ucp_ep_close_nbx", s)
	if req != 0 {
		r := &Request{w: e.w, h: req}
		err = r.Wait(d)
		r.Release()
	}
	return err
}

// Request is a posted operation. Test progresses its worker and reports
// whether it is done; Release frees it (cancelling it first when it is
// still pending). Go memory it reads or writes stays pinned until then.
type Request struct {
	w    *Worker
	ep   *Endpoint // the endpoint of a send or read, nil for others
	h    uintptr   // 0 once complete
	recv bool
	done bool
	n    int
	err  error
	rkey uintptr
	pin  runtime.Pinner
}

// Send posts the send of [p, p+n) with tag (ucp_tag_send_nbx); m, when
// not nil, is its registration.
func (e *Endpoint) Send(p unsafe.Pointer, n int, tag uint64, m *Mem, cuda bool) (*Request, error) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.h == 0 {
		return nil, errEndpointClosed("ucp_tag_send_nbx")
	}
	if s := cEpStatus(e.h); s != OK {
		return nil, check("ucp_tag_send_nbx", s)
	}
	r := &Request{w: e.w, ep: e, n: n}
	r.pin.Pin(p)
	h, s := cTagSend(e.h, p, n, tag, m.handle(), cuda)
	return r.posted("ucp_tag_send_nbx", h, s)
}

// Recv posts the receive of at most n bytes into [p, p+n) of the message
// with tag (ucp_tag_recv_nbx, every tag bit matched).
func (w *Worker) Recv(p unsafe.Pointer, n int, tag uint64, m *Mem, cuda bool) (*Request, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := &Request{w: w, recv: true}
	r.pin.Pin(p)
	h, got, s := cTagRecv(w.h, p, n, tag, m.handle(), cuda)
	r.n = got
	return r.posted("ucp_tag_recv_nbx", h, s)
}

// ReadBack posts a one-byte RDMA read of addr (inside m) into dst through
// e: after it completes, every earlier NIC write into m's memory is
// visible (the GPUDirect flush).
func (e *Endpoint) ReadBack(m *Mem, addr, dst unsafe.Pointer) (*Request, error) {
	e.w.mu.Lock()
	defer e.w.mu.Unlock()
	if e.h == 0 {
		return nil, errEndpointClosed("ucp_get_nbx")
	}
	r := &Request{w: e.w, ep: e}
	r.pin.Pin(dst)
	h, rkey, s := cReadBack(e.w.ctx.h, e.h, m.handle(), addr, dst)
	r.rkey = rkey
	return r.posted("ucp_get_nbx", h, s)
}

func (r *Request) posted(call string, h uintptr, s Status) (*Request, error) {
	if err := check(call, s); err != nil {
		r.finish()
		return nil, err
	}
	r.h = h
	if h == 0 {
		r.done = true
		r.finish()
	} else if r.ep != nil {
		r.ep.ops++
	}
	return r, nil
}

// finish releases what the request held once it is complete (lock held).
func (r *Request) finish() {
	if r.rkey != 0 {
		cRkeyDestroy(r.rkey)
		r.rkey = 0
	}
	r.pin.Unpin()
}

// Test progresses the worker and reports whether r is done, the bytes a
// receive got, and its error; a cancelled request reports ErrCanceled.
// It progresses until r is done or the worker is idle, in one call into
// C.
func (r *Request) Test() (bool, int, error) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if !r.done && r.h != 0 {
		n, s := cTest(r.w.h, r.h, r.recv)
		r.settle(n, s)
	}
	return r.done, r.n, r.err
}

// completed reports whether r, if not nil, is complete, without
// progressing the worker (its completion is recorded as Test would).
func (r *Request) completed() bool {
	if r == nil {
		return false
	}
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.w.h != 0 {
		r.poll()
	}
	return r.done
}

// poll checks r's status without progressing, if it is pending (lock
// held).
func (r *Request) poll() {
	if r.done || r.h == 0 {
		return
	}
	if r.recv {
		r.settle(cRecvStatus(r.h))
	} else {
		r.settle(0, cRequestStatus(r.h))
	}
}

// settle records r's status s (and a receive's length n), freeing r once
// it is done (lock held).
func (r *Request) settle(n int, s Status) {
	if r.recv {
		r.n = n
	}
	if s == InProgress {
		return
	}
	if s == ErrCanceled {
		r.err = gccl.Errorf(gccl.InvalidUsage, "ucx request", "cancelled: %w", s)
	} else {
		r.err = check("ucx request", s)
	}
	r.done = true
	r.free()
	r.finish()
}

// free gives r's handle back to UCX (ucp_request_free; lock held): a
// pending request is then freed by UCX when it completes.
func (r *Request) free() {
	cRequestFree(r.h)
	r.h = 0
	if r.ep != nil {
		r.ep.ops--
	}
}

// handBack gives a pending released request to UCX before the worker is
// destroyed (lock held): a receive is cancelled first; the destroy
// completes what is left, and UCX frees it then.
func (r *Request) handBack() {
	if r.h == 0 {
		return
	}
	if r.recv {
		cRequestCancel(r.w.h, r.h)
	}
	r.free()
}

// Wait tests r, sleeping on the worker's events in between, until it is
// done or d passes (a TimeoutError), or the worker's Hurry bound.
func (r *Request) Wait(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		done, _, err := r.Test()
		if done {
			return err
		}
		left := time.Until(r.w.bound(deadline))
		if left <= 0 {
			return gccl.Errorf(gccl.TimeoutError, "ucx request", "not done after %v", d)
		}
		if err := r.Sleep(min(left, 100*time.Millisecond)); err != nil {
			return err
		}
	}
}

// Cancel asks UCX to cancel a pending receive (ucp_request_cancel); it
// completes with ErrCanceled as the worker progresses.
func (r *Request) Cancel() {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if !r.done && r.h != 0 {
		cRequestCancel(r.w.h, r.h)
	}
}

// Release gives a request up: a done one is already freed; a pending
// receive is cancelled; what is still pending then is left to the worker,
// which frees it when it completes (at the latest in Close). The caller
// must not use r again.
func (r *Request) Release() {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.done || r.h == 0 {
		return
	}
	if r.recv {
		cRequestCancel(r.w.h, r.h)
	}
	r.w.progress()
	r.poll()
	if !r.done {
		// UCX still owns it (a send until its endpoint is closed, a
		// receive already matched): the worker frees it once it
		// completes, and its memory stays pinned until then.
		r.w.orphans = append(r.w.orphans, r)
	}
}
