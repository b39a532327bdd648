package fault

import (
	"context"
	gonet "net"
	"runtime"
	"testing"
	"time"

	tnet "github.com/gccl/gccl/transport/internal/net"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// Stream is a socket provider connection (transport/internal/net) over
// given sockets, out[0] and in[0] the control socket: the tests inject
// faults into the sockets under its framing. Each message is one transfer.
type Stream struct {
	S *tnet.SendComm
	R *tnet.RecvComm
}

// NewStream connects out (the sending ends) to in, both ends with
// payload checksums on or off (tnet.Options.Checksum); Close runs at
// cleanup.
func NewStream(t *testing.T, out, in []gonet.Conn, checksum bool) *Stream {
	t.Helper()
	opts := tnet.Options{Threads: 2, Timeout: 5 * time.Second, Checksum: checksum}
	s, err := tnet.NewSendComm(out, opts)
	require.NoError(t, err)
	r, err := tnet.NewRecvComm(in, opts)
	require.NoError(t, err)
	st := &Stream{s, r}
	t.Cleanup(st.Close)
	return st
}

// Send sends p and waits until it is written.
func (st *Stream) Send(ctx context.Context, p []byte, tag uint32) error {
	return transfer(ctx, st.S, p, func(r network.Region, m network.MemHandle) (network.Request, error) {
		return st.S.Isend(r, m, tag)
	})
}

// Recv receives a transfer of at most n bytes.
func (st *Stream) Recv(ctx context.Context, n int, tag uint32) ([]byte, error) {
	b := make([]byte, n)
	err := transfer(ctx, st.R, b, func(r network.Region, m network.MemHandle) (network.Request, error) {
		return st.R.Irecv(r, m, tag)
	})
	return b, err
}

func transfer(ctx context.Context, c network.Comm, b []byte, post func(network.Region, network.MemHandle) (network.Request, error)) error {
	var pin runtime.Pinner
	if len(b) > 0 {
		pin.Pin(&b[0])
	}
	defer pin.Unpin()
	m, err := c.Register(network.HostRegion(b))
	if err != nil {
		return err
	}
	defer c.Deregister(m)
	q, err := post(network.HostRegion(b), m)
	if err != nil {
		return err
	}
	_, err = q.(network.Waiter).Wait(ctx)
	return err
}

// Close closes both ends.
func (st *Stream) Close() {
	st.S.Close()
	st.R.Close()
}
