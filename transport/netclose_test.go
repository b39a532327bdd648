package transport

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNetSendThenClose: what a sender's Send completed reaches the receiver
// even when the sender closes its endpoint right after (TCP delivers what
// was written before the FIN): the receiver binds late, after the sender
// closed, or early, before it sent; on several channels; with messages
// inline on the control socket, cut into transfers, and cut into pieces on
// the data sockets.
func TestNetSendThenClose(t *testing.T) {
	sizes := []int{1, 66, 0, 4095, 100003, 7, 64 << 10, 1}
	big := []int{66, 1 << 20, 300007, 1}
	for _, tc := range []struct {
		name  string
		chunk int
		sizes []int
		early bool // the receiver binds before the sender sends
	}{
		{"late", 16 << 10, sizes, false},
		{"early", 16 << 10, sizes, true},
		{"late-pieces", 512 << 10, big, false},
		{"early-pieces", 512 << 10, big, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const nch = 3
			w := newWorld(t, 2, modes[1], func(c *Config) { c.NetChunkSize = tc.chunk })
			links := w.connectAll(t, nch)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if tc.early {
				for c := range nch {
					require.NoError(t, links[1][0][c].recv.(interface{ Bind(context.Context) error }).Bind(ctx))
				}
			}
			sent := make(chan error, 1)
			go func() {
				var wg sync.WaitGroup
				errs := make([]error, nch)
				for c := range nch {
					wg.Go(func() {
						for i, sz := range tc.sizes {
							if err := links[0][1][c].send.Send(ctx, Desc{byte(i)}, payload(0, 1, c, i, sz)); err != nil {
								errs[c] = err
								return
							}
						}
					})
				}
				wg.Wait()
				w.eps[0].Close() // at once: the receiver has not read everything yet
				for _, err := range errs {
					if err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			select {
			case err := <-sent:
				require.NoError(t, err)
				time.Sleep(20 * time.Millisecond) // the receiving side sees the close before it reads
			case <-time.After(200 * time.Millisecond): // sends blocked on full socket buffers
			}
			var wg sync.WaitGroup
			errs := make([]error, nch)
			for c := range nch {
				wg.Go(func() { errs[c] = recvCheck(ctx, links[1][0][c].recv, 0, 1, c, tc.sizes) })
			}
			wg.Wait()
			for c, err := range errs {
				require.NoError(t, err, "channel %d", c)
			}
			// Past what was sent, the receiver learns that the peer closed.
			err := links[1][0][0].recv.Recv(ctx, Expect(1), func([]byte) error { return nil })
			require.Error(t, err)
		})
	}
}
