package regcache

import (
	"github.com/gccl/gccl/internal/fdpass"
	"github.com/gccl/gccl/internal/gccltest"
	"strings"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEntryBoundsSocket: socket names past the abstract namespace's limit
// are not sent, and an entry claiming one is refused.
func TestEntryBoundsSocket(t *testing.T) {
	long := entry{Registered: true, Kind: VMM, Size: 100, Len: 100, Sock: "@" + strings.Repeat("s", fdpass.MaxName)}
	var d entry
	require.NoError(t, d.unmarshal(long.marshal()))
	assert.Empty(t, d.Sock, "an over-long name is dropped, so peers stage")
	b := entry{Registered: true, Kind: VMM, Size: 100, Len: 100, Sock: "@x"}.marshal()
	b[156] = fdpass.MaxName + 1 // claim a longer name than allowed
	b = append(b, make([]byte, fdpass.MaxName-1)...)
	gccltest.RequireCode(t, d.unmarshal(b), gccl.RemoteError)
	b = entry{Registered: true, Kind: VMM, Size: 100, Len: 100}.marshal()
	b[22] = 4 // an unknown flag
	gccltest.RequireCode(t, d.unmarshal(b), gccl.RemoteError)
}

// FuzzEntryUnmarshal: no input panics, errors are typed, and what decodes
// encodes back to the same bytes.
func FuzzEntryUnmarshal(f *testing.F) {
	f.Add(entry{Registered: true, Kind: VMM, Size: 1 << 20, Offset: 64, Len: 4096, Sock: "@gccl-x", Host: 7}.marshal())
	f.Add(entry{Msg: "failed", Unreached: true}.marshal())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var e entry
		if err := e.unmarshal(b); err != nil {
			gccltest.RequireCode(t, err, gccl.RemoteError)
			return
		}
		require.Equal(t, b, e.marshal())
	})
}
