package comm

import "github.com/gccl/gccl"

// A communicator is broken once one of its ranks dies: the bootstrap
// notices (the dead process's ring connections close without the goodbye a
// normal Close sends, and its ring neighbours pass the news around the
// ring), and the watcher aborts this rank's engine, so every
// operation in flight ends at once instead of at its deadline, and
// AsyncError reports gccl.ErrRemote naming the lost rank, on every survivor
// (even one that was not exchanging data with the dead rank).

// startWatch starts the goroutine that waits for a peer's loss; shut stops it.
func (c *Comm) startWatch() {
	c.watchStop = make(chan struct{})
	c.watchDone = make(chan struct{})
	lost := c.boot.Lost()
	go func() {
		defer close(c.watchDone)
		select {
		case <-lost:
			err := gccl.Errorf(gccl.RemoteError, "comm", "communicator %q (rank %d) lost a peer; abort it and make a new one: %w",
				c.cfg.Name, c.rank, c.boot.LostErr())
			c.lost.Store(&err)
			c.log.Warn("peer lost; aborting the operations in flight", "err", err)
			_ = c.eng.AbortWith(err)
		case <-c.watchStop:
		}
	}()
}

// stopWatch stops the watcher and waits for it; safe when none was started.
func (c *Comm) stopWatch() {
	if c.watchStop == nil {
		return
	}
	close(c.watchStop)
	<-c.watchDone
	c.watchStop = nil
}

// lostErr is the peer loss the watcher saw, or nil.
func (c *Comm) lostErr() error {
	if p := c.lost.Load(); p != nil {
		return *p
	}
	return nil
}
