package comm

import (
	"context"
	"errors"
	"io"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/progress"
)

// Finalize flushes the communicator and synchronises with the other ranks:
// it returns when every rank has called Finalize (or the deadline passed).
// Afterwards only Close is allowed. Every rank must call it.
//
// Ranks of one communicator that one call made in this process (InitAll,
// InitRanks, a group's InitRank or Split) are finalized together, with
// group.Finalize for each in one group or FinalizeAll: a Finalize of one of
// them alone, while another is still open, fails at once with
// gccl.ErrInvalidUsage (one goroutine calling Finalize on each in turn
// would otherwise wait for the next until the deadline).
func (c *Comm) Finalize() error {
	if err := c.open(); err != nil {
		return err
	}
	if err := c.sibs.unfinalized(c, nil); err != nil {
		return err
	}
	return c.finalize()
}

// finalize is Finalize after its checks.
func (c *Comm) finalize() error {
	if !c.state.CompareAndSwap(stateOpen, stateFinalized) {
		return gccl.Errorf(gccl.InvalidUsage, "comm", "Finalize was already called")
	}
	defer progress.Enter(true)()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	if err := c.eng.Drain(ctx); err != nil {
		return err
	}
	// Before the barrier: past it no rank's proxy watches its connections,
	// so the Closes that follow, in any order, report nothing.
	if err := c.eng.Quiesce(ctx); err != nil {
		return err
	}
	if err := c.boot.Barrier(ctx); err != nil {
		return gccl.Errorf(gccl.Code(err), "comm", "finalizing: %w", err)
	}
	return nil
}

// Close destroys the communicator: it waits (up to the deadline) for
// launched operations, then frees every resource. Safe on nil and twice.
func (c *Comm) Close() error {
	return c.shut(false)
}

// Abort destroys the communicator at once, cancelling what is in flight;
// ranks waiting on this one get gccl.ErrRemote. After a successful
// Finalize nothing is in flight and peers are done with this rank: Abort
// then leaves as Close does, and no peer counts it as lost. Safe on nil
// and twice.
func (c *Comm) Abort() error {
	return c.shut(true)
}

func (c *Comm) shut(abort bool) error {
	if c == nil {
		return nil
	}
	defer progress.Enter(true)()
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	prev := c.state.Swap(stateClosed)
	if prev == stateClosed {
		return nil
	}
	if abort || !isReady(c) {
		c.cancel() // interrupt a nonblocking init still running
	}
	<-c.ready // bounded: init's own deadline, or the cancel above
	if c.initErr != nil {
		return nil
	}
	c.stopWatch()
	var errBusy, errEng, errBoot error
	switch {
	case abort && prev == stateFinalized:
		// Finalize's barrier passed: every peer is done with this rank, so
		// leaving is no failure; say goodbye, or peers still returning from
		// the barrier would count this rank as lost.
		errEng, errBoot = c.eng.Abort(), c.boot.Close()
	case abort:
		errEng, errBoot = c.eng.Abort(), c.boot.Abort()
	default:
		errBusy = c.busy()
		errEng = c.eng.Close()
		errBoot = c.boot.Close()
	}
	errRegs := c.closeRegs()
	errDev := c.closeDevice()
	c.log.Info("communicator destroyed", "abort", abort)
	return errors.Join(errBusy, errEng, errRegs, errBoot, errDev)
}

// closeRegs releases the communicator's buffer registrations, once its
// engine has stopped (their handles become deregistered).
func (c *Comm) closeRegs() error {
	return c.regs.Close() // safe on nil and twice
}

// closeDevice closes the device when the communicator opened it (a GPU:
// its streams, its allocations, its hold on the primary context), once.
func (c *Comm) closeDevice() error {
	if !c.ownsDev {
		return nil
	}
	c.ownsDev = false
	if d, ok := c.dev.(io.Closer); ok {
		return d.Close()
	}
	return nil
}

// busy returns an InvalidUsage error when operations are still in flight
// (Close then waits for them, up to the deadline, and frees everything).
func (c *Comm) busy() error {
	if c.eng.AsyncError() != nil {
		return nil // what is in flight fails at once; the error was reported
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if c.eng.Drain(expired) == nil {
		return nil
	}
	return gccl.Errorf(gccl.InvalidUsage, "comm", "Close of communicator %q (rank %d) with operations in flight: "+
		"they were waited for (up to the deadline) and the communicator was freed; synchronize the streams or call Finalize before Close, or use Abort",
		c.cfg.Name, c.rank)
}

func isReady(c *Comm) bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// AsyncError returns gccl.ErrRemote naming the rank once a peer has died
// (see liveness.go), else the first error of an operation that failed after
// it was launched (a deadline passed, a connection broke), nil if there is
// none, gccl.ErrInProgress during a nonblocking init. An operation that
// timed out before the peer was lost keeps its gccl.ErrTimeout, which
// names the rank that stalled: the peer lost then is most often one that
// timed out on the same stall and aborted.
func (c *Comm) AsyncError() error {
	if err := c.Status(); err != nil {
		return err
	}
	err := c.eng.AsyncError()
	if gccl.Code(err) == gccl.TimeoutError {
		return err // recorded before the loss, or its deadline passed before it (engine.Launch.Done)
	}
	if lost := c.lostErr(); lost != nil {
		return lost
	}
	return err
}

// InitAll creates a communicator over the given devices in this process,
// one rank per device (rank i on devices[i]), each initialised by its own
// goroutine. If any rank fails, all are aborted. The ranks are finalized
// together (see Finalize).
func InitAll(devices []int) ([]*Comm, error) {
	if len(devices) == 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "devices", "no devices; pass at least one ordinal")
	}
	seen := map[int]bool{}
	for _, d := range devices {
		if d < 0 || seen[d] {
			return nil, gccl.Errorf(gccl.InvalidArgument, "devices", "device %d is negative or listed twice in %v", d, devices)
		}
		seen[d] = true
	}
	id, err := NewUniqueID()
	if err != nil {
		return nil, err
	}
	reqs := make([]InitReq, len(devices))
	for i, d := range devices {
		reqs[i] = InitReq{NRanks: len(devices), ID: id, Rank: i, Config: &Config{Device: d, DeviceSet: true, Blocking: ptr(true)}}
	}
	return InitRanks(reqs)
}

// InitAllN is InitAll over devices 0 .. n-1.
func InitAllN(n int) ([]*Comm, error) {
	if n < 1 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "n", "%d devices; pass at least one", n)
	}
	devices := make([]int, n)
	for i := range devices {
		devices[i] = i
	}
	return InitAll(devices)
}

func ptr[T any](v T) *T { return &v }
