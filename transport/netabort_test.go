package transport

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endingComm is a SendComm and RecvComm that records how it was ended;
// its transfers fail with ErrTimeout once broken is set.
type endingComm struct {
	network.SendComm // nil: only what the tests call is implemented
	broken           bool
	closes, aborts   int
}

type noMem struct{ r network.Region }

func (m noMem) Region() network.Region { return m.r }

func (c *endingComm) Register(r network.Region) (network.MemHandle, error) { return noMem{r}, nil }
func (c *endingComm) Deregister(network.MemHandle) error                   { return nil }
func (c *endingComm) Close() error                                         { c.closes++; return nil }
func (c *endingComm) Abort() error                                         { c.aborts++; return nil }
func (c *endingComm) Isend(network.Region, network.MemHandle, uint32) (network.Request, error) {
	return c.transfer()
}
func (c *endingComm) Irecv(network.Region, network.MemHandle, uint32) (network.Request, error) {
	return c.transfer()
}
func (c *endingComm) Flush(network.Region, network.MemHandle) (network.Request, error) {
	return c.transfer()
}

func (c *endingComm) transfer() (network.Request, error) {
	if c.broken {
		return nil, gccl.Errorf(gccl.TimeoutError, "fake", "the peer takes nothing")
	}
	return doneReq{}, nil
}

type doneReq struct{}

func (doneReq) Test() (bool, int, error) { return true, 0, nil }

// TestBrokenStreamAborts: a network connection ends with Close while its
// stream is sound, and with the provider's Abort (network.Aborter) once a
// transfer failed (its peer may be unreachable, behind a cut link, where
// an orderly close waits for it) or when its endpoint aborts.
func TestBrokenStreamAborts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		broken, abort bool
		want          string
	}{
		{"sound", false, false, "close"},
		{"broken", true, false, "abort"},
		{"endpoint aborting", false, true, "abort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, dir := range []string{"send", "recv"} {
				c := &endingComm{}
				var aborting atomic.Bool
				var conn Conn
				if dir == "send" {
					s, err := newNetSend(c, 1<<10, 0, &aborting)
					require.NoError(t, err)
					conn = s
				} else {
					r, err := newNetRecv(c, 1<<10, 0, &aborting)
					require.NoError(t, err)
					conn = r
				}
				c.broken = tc.broken
				if tc.broken && dir == "send" {
					require.Error(t, conn.Send(context.Background(), Desc{}, []byte{1}))
				}
				if tc.broken && dir == "recv" {
					require.Error(t, conn.Recv(context.Background(), Expect(1), func([]byte) error { return nil }))
				}
				aborting.Store(tc.abort)
				require.NoError(t, conn.Close())
				got := map[bool]string{true: "abort", false: "close"}[c.aborts == 1]
				assert.Equal(t, tc.want, got, "%s: closes %d, aborts %d", dir, c.closes, c.aborts)
				assert.Equal(t, 1, c.closes+c.aborts, dir)
			}
		})
	}
}
