package msg

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/require"
)

func TestExpect(t *testing.T) {
	accept := Expect(5)
	require.NoError(t, accept(Desc{1}, 5))
	err := accept(Desc{}, 6)
	require.Equal(t, gccl.InvalidUsage, gccl.Code(err))
	require.ErrorContains(t, err, "received a message of 6 bytes, want 5")
}
