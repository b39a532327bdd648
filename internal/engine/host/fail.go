package host

import (
	"errors"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/transport"
)

// failConns tells every connected peer that this rank failed with err, so
// that a peer waiting for its bytes fails at once naming it, instead of
// waiting for its deadline (and blaming whoever it waited for).
func (b *Backend) failConns(err error) {
	conns := b.allConns()
	code := gccl.RemoteError
	switch {
	case errors.Is(err, opdesc.ErrDisagree): // ranks that disagree: a caller's mistake on both
		code = gccl.InvalidUsage
	case gccl.Code(err) == gccl.TimeoutError: // a peer waiting for this rank follows its report (stall.go)
		code = gccl.TimeoutError
	}
	ferr := gccl.Errorf(code, "peer", "rank %d failed: %v", b.rank, err)
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.send.Fail(ferr) })
	}
	wg.Wait()
}

// refusal returns a peer's refusal of this rank's messages (a disagreement
// it detected), waiting up to refusalGrace for one on its way: the rank
// then reports the disagreement, not the connection the peer closed after.
func (b *Backend) refusal() error {
	conns := b.allConns()
	for deadline := time.Now().Add(refusalGrace); ; time.Sleep(time.Millisecond) {
		for _, c := range conns {
			if r, ok := c.sendRefuser(); ok {
				if err := r.Refusal(); err != nil {
					return gccl.Errorf(gccl.InvalidUsage, "peer", "rank %d refused this rank's message: %v", c.peer, err)
				}
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
	}
}

// refusalGrace is how long a failed rank waits for a peer's refusal.
const refusalGrace = 20 * time.Millisecond

func (c *peerConn) sendRefuser() (transport.Refuser, bool) {
	if c == nil {
		return nil, false
	}
	r, ok := c.send.(transport.Refuser)
	return r, ok
}
