package fault

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/stretchr/testify/require"
)

// FuzzParseUniqueID: any bytes either parse into an ID that round-trips,
// or fail with a typed InvalidArgument; never a panic.
func FuzzParseUniqueID(f *testing.F) {
	id, err := comm.NewUniqueID()
	require.NoError(f, err)
	f.Add(id.Bytes())
	f.Add(id.Bytes()[:64])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := comm.ParseUniqueID(b)
		if err != nil {
			require.ErrorIs(t, err, gccl.ErrInvalidArgument)
			return
		}
		require.Equal(t, b, got.Bytes())
	})
}
