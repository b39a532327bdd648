package bootstrap

import (
	"context"
	"math"
	"time"

	"github.com/gccl/gccl/internal/wire"
)

// The bootstrap's full mesh doubles as the communicator's liveness check:
// a process that dies (kill -9, crash, Abort) has its sockets closed by the
// kernel or by Abort, so every other rank's reader sees the end of the
// stream at once. A rank that closes normally says goodbye first, so that
// its peers can tell the two apart: only an end without a goodbye counts as
// the loss of a peer.

// byeTag is the internal tag of the goodbye message; internal collective
// tags count up from 1 and never reach it.
const byeTag = math.MaxUint64

// byeTimeout bounds the goodbye's write to each peer.
const byeTimeout = 200 * time.Millisecond

// Lost is closed when a peer's bootstrap connection ends without a goodbye:
// the peer process died or aborted. LostErr then says which.
func (n *Net) Lost() <-chan struct{} {
	if n == nil {
		return nil
	}
	return n.lost
}

// LostErr is the first peer loss (gccl.ErrRemote naming the rank), or nil.
func (n *Net) LostErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lostErr
}

// sayGoodbye tells every peer that this rank is closing normally.
func (n *Net) sayGoodbye() {
	if n.usable() != nil {
		return
	}
	for p := range n.nranks {
		if p == n.rank {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
		_ = n.send(ctx, p, wire.Data{Internal: true, Tag: byeTag})
		cancel()
	}
}

// isBye reports whether m is a peer's goodbye.
func isBye(m wire.Data) bool { return m.Internal && m.Tag == byeTag }

// noteLoss records err as the loss of peer p unless p said goodbye or the
// network is closed; called with n.mu held.
func (n *Net) noteLoss(p int, err error) {
	if n.left[p] || n.lostErr != nil {
		return
	}
	n.lostErr = err
	close(n.lost)
}
