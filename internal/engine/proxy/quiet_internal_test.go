package proxy

import (
	"testing"
	"time"

	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeRecv is a receiving connection whose receives never complete; it
// counts their Tests.
type fakeRecv struct{ tests int }

type fakeHandle struct{ r network.Region }

func (h fakeHandle) Region() network.Region { return h.r }

type fakeRequest struct{ c *fakeRecv }

func (q fakeRequest) Test() (bool, int, error) {
	q.c.tests++
	return false, 0, nil
}

func (c *fakeRecv) Register(r network.Region) (network.MemHandle, error) { return fakeHandle{r}, nil }
func (c *fakeRecv) Deregister(network.MemHandle) error                   { return nil }
func (c *fakeRecv) Close() error                                         { return nil }
func (c *fakeRecv) Irecv(network.Region, network.MemHandle, uint32) (network.Request, error) {
	return fakeRequest{c}, nil
}
func (c *fakeRecv) Flush(network.Region, network.MemHandle) (network.Request, error) {
	return fakeRequest{c}, nil
}

// TestServeQuiet: a pass tests the receives of a receiving connection on
// which something arrived within quietAfter, and those of a quiet one
// only when told to test all.
func TestServeQuiet(t *testing.T) {
	p := &Proxy{epoch: time.Now(), timeout: time.Minute}
	now := 10 * quietAfter
	conns := make([]*fakeRecv, 2)
	for i, arrived := range []int64{now, now - quietAfter - 1} { // in use, quiet
		f, err := NewFIFO(make([]byte, FIFOBytes(SlotAlign)), SlotAlign)
		require.NoError(t, err)
		conns[i] = &fakeRecv{}
		k, err := p.newLink(f, conns[i], Label{Channel: i}, "recv")
		require.NoError(t, err)
		c := &recvConn{conn: k, rc: conns[i]}
		c.start(arrived)
		p.recvs = append(p.recvs, c)
	}
	tests := func() [2]int { return [2]int{conns[0].tests, conns[1].tests} }
	pass := func(now int64, all bool) {
		t.Helper()
		_, _, err := p.serve(now, all)
		require.NoError(t, err)
	}
	pass(now, false)
	assert.Equal(t, [2]int{1, 0}, tests(), "a pass that skips quiet connections")
	pass(now, true)
	assert.Equal(t, [2]int{2, 1}, tests(), "a pass that tests all")
	pass(now+quietAfter+1, false)
	assert.Equal(t, [2]int{2, 1}, tests(), "both quiet")
}
