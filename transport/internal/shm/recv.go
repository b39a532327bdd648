package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
	"github.com/gccl/gccl/transport/internal/msg"
)

// Receiver is the consuming end of a ring; it implements transport.Conn's Recv.
type Receiver struct {
	end
	tail uint64
	err  error // sticky: a message was refused or cut short
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
			c := &Receiver{end: end{r: r, timeout: o.Timeout}}
			c.setWaiter("shm recv", offSenderPid, c.ended)
			return c, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if err := poll.Pause(); err != nil {
			return nil, gccl.Errorf(gccl.Code(err), path, "waiting for the peer to create its shared-memory ring: %w", err)
		}
	}
}

// Recv receives the next message: it hands accept the descriptor and
// length from the message's first slot, then consume every byte, in pieces
// that point straight into the shared slots and are valid only during the
// call. An error from accept or consume ends Recv and is returned as is;
// an error once the message was accepted leaves the ring unusable (later
// calls return it).
func (c *Receiver) Recv(ctx context.Context, accept func(d msg.Desc, n int) error, consume func(piece []byte) error) error {
	if err := c.begin(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	w := c.waiter(ctx)
	hdr, err := c.await(w)
	if err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(hdr[slotFlags:])&slotFirst == 0 {
		c.err = gccl.Errorf(gccl.RemoteError, "shm recv", "slot %d does not start a message: the ring is corrupted", c.tail)
		return c.err
	}
	n := binary.LittleEndian.Uint64(hdr[slotMsg:])
	if n > math.MaxInt32*uint64(c.r.nslots) {
		c.err = gccl.Errorf(gccl.RemoteError, "shm recv", "message of %d bytes: the ring is corrupted", n)
		return c.err
	}
	if err := accept(msg.Desc(hdr[slotDesc:slotDesc+msg.DescSize]), int(n)); err != nil {
		c.err = err
		return err
	}
	if err := c.body(w, int(n), consume); err != nil {
		if c.err == nil {
			c.err = err
		}
		return err
	}
	return nil
}

// await waits for the next slot and returns its header: while the ring is
// empty it sleeps until the producer's head passes the tail, or the
// producer failed or closed its end, or w ends the wait.
func (c *Receiver) await(w *waiter) ([]byte, error) {
	r := c.r
	for atomic.LoadUint64(r.u64(offHead)) == c.tail {
		if err := r.headSeq().Await(uint32(c.tail+1), w.check); err != nil {
			return nil, err
		}
	}
	hdr, _ := r.slot(int(c.tail % uint64(r.nslots)))
	return hdr, nil
}

// body hands consume the n bytes of the message whose first slot is at tail.
func (c *Receiver) body(w *waiter, n int, consume func(piece []byte) error) error {
	r := c.r
	for first := true; first || n > 0; first = false {
		hdr, err := c.await(w)
		if err != nil {
			return err
		}
		_, data := r.slot(int(c.tail % uint64(r.nslots)))
		l := int(atomic.LoadUint32(slotLenWord(hdr)))
		isFirst := binary.LittleEndian.Uint32(hdr[slotFlags:])&slotFirst != 0
		if l > r.slotSize || l > n || isFirst != first || l == 0 && n > 0 {
			c.err = gccl.Errorf(gccl.RemoteError, "shm recv", "slot holds %d bytes (slot size %d, %d left of the message): the ring is corrupted", l, r.slotSize, n)
			return c.err
		}
		var cerr error
		if l > 0 {
			cerr = consume(data[:l])
		}
		n -= l
		c.tail++
		atomic.StoreUint64(r.u64(offTail), c.tail)
		r.tailSeq().Advance(uint32(c.tail))
		if cerr != nil {
			if n > 0 {
				c.err = cerr
			}
			return cerr
		}
	}
	return nil
}

// ended reports, while the ring is empty, a failed producer or one that
// closed its end (once its last bytes are consumed).
func (c *Receiver) ended() error {
	r := c.r
	if err := r.failure(offSenderFailed, "shm recv"); err != nil {
		return err
	}
	if atomic.LoadUint32(r.u32(offSenderClosed)) != 0 && atomic.LoadUint64(r.u64(offHead)) == c.tail {
		return gccl.Errorf(gccl.RemoteError, "shm recv", "the sending peer closed its end")
	}
	return nil
}

// Fail records err in the ring's header (the consumer refused a message,
// or failed): the producer's Send fails with it.
func (c *Receiver) Fail(err error) {
	if err == nil || c.begin() != nil {
		return
	}
	defer c.mu.Unlock()
	c.r.setFailure(offRecvFailed, gccl.Code(err), err.Error())
	if c.err == nil {
		c.err = err
	}
}

// Send is not supported on the consuming end.
func (c *Receiver) Send(context.Context, msg.Desc, []byte) error {
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
