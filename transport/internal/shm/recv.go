package shm

import (
	"context"
	"errors"
	"os"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
)

// Receiver is the consuming end of a ring; it implements transport.Conn's Recv.
type Receiver struct {
	end
	tail uint64
	off  int // bytes of slot tail already consumed
}

// Open waits (until ctx's deadline, or o.Timeout) for the producer to create
// the ring at path, maps it, records this process as the consumer and unlinks
// the file: from then on only the two mappings keep it alive.
func Open(ctx context.Context, path string, o Options) (*Receiver, error) {
	poll := wait.Poller{Ctx: ctx, Deadline: wait.Deadline(ctx, o.Timeout), What: path}
	for {
		r, err := openRing(path)
		if err == nil {
			atomic.StoreUint32(r.u32(offReceiverPid), uint32(os.Getpid()))
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				r.unmap()
				return nil, gccl.Errorf(gccl.SystemError, path, "unlinking the shared-memory ring: %w", err)
			}
			return &Receiver{end: end{r: r, timeout: o.Timeout}}, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if err := poll.Pause(); err != nil {
			return nil, gccl.Errorf(gccl.Code(err), path, "waiting for the peer to create its shared-memory ring: %w", err)
		}
	}
}

// Recv hands exactly n bytes to consume, in pieces that point straight into
// the shared slots and are valid only during the call. An error from consume
// ends Recv and is returned as is; the piece counts as consumed.
func (c *Receiver) Recv(ctx context.Context, n int, consume func(piece []byte) error) error {
	if n < 0 {
		return gccl.Errorf(gccl.InvalidArgument, "n", "negative byte count %d", n)
	}
	if err := c.begin(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	r := c.r
	poll := c.poller(ctx, "shm recv", offSenderPid)
	for n > 0 {
		if atomic.LoadUint64(r.u64(offHead)) == c.tail {
			if err := c.idle(&poll); err != nil {
				return err
			}
			continue
		}
		lenp, data := r.slot(int(c.tail % uint64(r.nslots)))
		l := int(atomic.LoadUint32(lenp))
		if l <= c.off || l > r.slotSize {
			return gccl.Errorf(gccl.RemoteError, "shm recv", "slot holds %d bytes (slot size %d): the ring is corrupted", l, r.slotSize)
		}
		k := min(l-c.off, n)
		err := consume(data[c.off : c.off+k])
		c.off += k
		n -= k
		if c.off == l {
			c.off = 0
			c.tail++
			atomic.StoreUint64(r.u64(offTail), c.tail)
		}
		if err != nil {
			return err
		}
		poll.Reset()
	}
	return nil
}

// idle runs when the ring is empty: it reports a closed producer (once its
// last bytes are consumed) or a local Close, else pauses.
func (c *Receiver) idle(poll *wait.Poller) error {
	r := c.r
	if atomic.LoadUint32(r.u32(offSenderClosed)) != 0 && atomic.LoadUint64(r.u64(offHead)) == c.tail {
		return gccl.Errorf(gccl.RemoteError, "shm recv", "the sending peer closed its end")
	}
	if c.closing.Load() {
		return errClosed
	}
	return poll.Pause()
}

// Send is not supported on the consuming end.
func (c *Receiver) Send(context.Context, []byte) error {
	return gccl.Errorf(gccl.InvalidUsage, "conn", "Send on the receiving end of a shared-memory ring")
}

// Close marks the consumer closed and unmaps the ring; safe to call twice.
func (c *Receiver) Close() error {
	if c == nil {
		return nil
	}
	c.close(offRecvClosed)
	return nil
}

// Abandon tells the producer of the ring at path, if it created it, that no
// consumer will come: it marks the ring closed by the consumer (so the
// producer's Send fails with gccl.ErrRemote) and unlinks the file.
func Abandon(path string) {
	r, err := openRing(path)
	if err != nil {
		return
	}
	atomic.StoreUint32(r.u32(offRecvClosed), 1)
	_ = os.Remove(path)
	r.unmap()
}
