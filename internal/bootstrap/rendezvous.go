package bootstrap

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
)

// rendezvous collects the ranks of one (unique ID, sub) at the root. Its
// fields are guarded by the root's mutex; socket writes happen outside it.
type rendezvous struct {
	r      *root
	e      *entry
	sub    uint8
	nranks int
	base   uint32
	relay  bool
	conns  []net.Conn
	addrs  [][]byte
	joined int
	expiry time.Time
	wait   time.Duration // the longest timeout a rank announced
	timer  *time.Timer
	failed error
}

func newRendezvous(r *root, e *entry, h wire.Hello) *rendezvous {
	return &rendezvous{r: r, e: e, sub: h.Sub, nranks: int(h.NRanks), base: h.Base, relay: h.Relay,
		conns: make([]net.Conn, h.NRanks), addrs: make([][]byte, h.NRanks)}
}

// join adds a rank; called with the root's mutex held.
func (rv *rendezvous) join(c net.Conn, h wire.Hello) {
	switch {
	case rv.failed != nil:
		go reject(c, rv.failed)
		return
	case int(h.NRanks) != rv.nranks:
		rv.fail(gccl.Errorf(gccl.InvalidArgument, "nranks",
			"rank %d says there are %d ranks but rank(s) before it said %d; every rank must pass the same count",
			h.Base+h.Rank, h.NRanks, rv.nranks), c)
		return
	case rv.conns[h.Rank] != nil:
		rv.fail(gccl.Errorf(gccl.InvalidArgument, "rank",
			"rank %d joined twice: two callers were given the same rank; give each a distinct rank in [0, %d)",
			h.Base+h.Rank, rv.nranks), c)
		return
	}
	rv.conns[h.Rank], rv.addrs[h.Rank] = c, h.Addr
	rv.joined++
	if rv.joined == rv.nranks {
		rv.wait = max(rv.wait, time.Duration(h.TimeoutMs)*time.Millisecond)
		rv.complete()
		return
	}
	// Give up a little before the earliest waiting rank does, so that it
	// hears which ranks are missing instead of a bare timeout.
	wait := time.Duration(h.TimeoutMs) * time.Millisecond
	rv.wait = max(rv.wait, wait)
	exp := time.Now().Add(wait - min(wait/5, 2*time.Second))
	if rv.timer == nil || exp.Before(rv.expiry) {
		if rv.timer != nil {
			rv.timer.Stop()
		}
		rv.expiry = exp
		rv.timer = time.AfterFunc(time.Until(exp), rv.expire)
	}
}

func (rv *rendezvous) expire() {
	rv.r.mu.Lock()
	defer rv.r.mu.Unlock()
	if rv.failed != nil || rv.joined == rv.nranks {
		return
	}
	var missing []uint32
	for i, c := range rv.conns {
		if c == nil {
			missing = append(missing, rv.base+uint32(i))
		}
	}
	rv.fail(gccl.Errorf(gccl.TimeoutError, "ranks",
		"%s %v never arrived at the root %v (%d of %d joined); check that every rank called init with this ID",
		rv.what(), missing, rv.r.addr, rv.joined, rv.nranks), nil)
}

func (rv *rendezvous) what() string {
	if rv.sub == 1 {
		return "slice leaders"
	}
	return "ranks"
}

// fail answers every waiting rank (and extra, if not nil) with err; later
// arrivals get the same answer.
func (rv *rendezvous) fail(err error, extra net.Conn) {
	rv.failed = err
	if rv.timer != nil {
		rv.timer.Stop()
	}
	rv.r.log().Warn("rendezvous failed", "root", rv.r.addr, "err", err)
	conns := append([]net.Conn{}, rv.conns...)
	if extra != nil {
		conns = append(conns, extra)
	}
	for _, c := range conns {
		if c != nil {
			go reject(c, err)
		}
	}
	clear(rv.conns)
}

// complete answers every rank with the address list and retires the ID.
func (rv *rendezvous) complete() {
	if rv.timer != nil {
		rv.timer.Stop()
	}
	delete(rv.e.subs, rv.sub)
	rv.e.used[rv.sub] = true
	rv.r.log().Info("rendezvous complete", "root", rv.r.addr, "nranks", rv.nranks, "sub", rv.sub)
	peers := wire.Peers{Addrs: rv.addrs}
	go rv.answer(rv.conns, wire.AppendFrame(nil, wire.TypePeers, peers.Encode()))
}

// answer sends frame to every rank; in relay mode it then waits for the
// leader's full list and relays it.
func (rv *rendezvous) answer(conns []net.Conn, frame []byte) {
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			_ = c.SetWriteDeadline(time.Now().Add(helloTimeout))
			if _, err := c.Write(frame); err != nil {
				rv.r.log().Warn("answering a rank failed", "rank", rv.base+uint32(i), "err", err)
			}
		})
	}
	wg.Wait()
	if rv.relay {
		rv.relayFull(conns, time.Now().Add(rv.wait))
		return
	}
	for _, c := range conns {
		_ = c.Close()
	}
}

// relayFull waits for the slice leader (index 0) to hand back the full
// address list and forwards it to the other members of the slice.
func (rv *rendezvous) relayFull(conns []net.Conn, deadline time.Time) {
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	leader := conns[0]
	_ = leader.SetReadDeadline(deadline)
	typ, p, err := wire.ReadFrame(leader, wire.MaxPayload)
	if err == nil && typ != wire.TypeForward {
		err = fmt.Errorf("expected the forwarded list, got %v", typ)
	}
	if err == nil {
		_, err = wire.DecodePeers(p)
	}
	frame := wire.AppendFrame(nil, wire.TypePeers, p)
	if err != nil {
		err = gccl.Errorf(gccl.RemoteError, "ranks", "slice leader rank %d failed to deliver the full rank list: %w", rv.base, err)
		st := wire.StatusOf(err)
		frame = wire.AppendFrame(nil, wire.TypeStatus, st.Encode())
	}
	for _, c := range conns[1:] {
		_ = c.SetWriteDeadline(time.Now().Add(helloTimeout))
		_, _ = c.Write(frame)
	}
}
