package transport

import (
	"context"
	"testing"

	"github.com/gccl/gccl"

	"github.com/gccl/gccl/transport/internal/shm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBuffSizeSetsTheShmRing: GCCL_BUFFSIZE (or NCCL_BUFFSIZE) is the bytes
// of one shared-memory ring; the default keeps shm's own geometry.
func TestBuffSizeSetsTheShmRing(t *testing.T) {
	t.Cleanup(reloadEnv)
	for val, want := range map[string]int{"": shm.DefaultSlotSize, "512K": 64 << 10, "1": 4 << 10, "64M": 8 << 20} {
		t.Setenv("GCCL_BUFFSIZE", val)
		reloadEnv()
		cfg := Config{}.resolve()
		assert.Equal(t, want, cfg.ShmSlotSize, "GCCL_BUFFSIZE=%q", val)
	}
	t.Setenv("GCCL_BUFFSIZE", "")
	t.Setenv("NCCL_BUFFSIZE", "1M")
	reloadEnv()
	assert.Equal(t, 128<<10, Config{}.resolve().ShmSlotSize)
	assert.Equal(t, 1000, Config{ShmSlotSize: 1000}.resolve().ShmSlotSize, "an explicit slot size wins")
}

// TestNetSelection: GCCL_NET (NCCL_NET) picks the provider, case-insensitive,
// and Config.NetName overrides it; auto takes socket where no provider
// reports an RDMA device; an unknown name is an error naming the choices.
func TestNetSelection(t *testing.T) {
	t.Cleanup(reloadEnv)
	for _, c := range []struct{ env, nccl, cfg, want string }{
		{"", "", "", "socket"}, {"socket", "", "", "socket"}, {"", "Socket", "", "socket"},
		{"AUTO", "", "", "socket"}, {"", "", "socket", "socket"}, {"bogus", "", "socket", "socket"},
	} {
		t.Setenv("GCCL_NET", c.env)
		t.Setenv("NCCL_NET", c.nccl)
		reloadEnv()
		ch, err := selectProvider(Config{NetName: c.cfg, IfName: "lo"}.resolve())
		require.NoError(t, err, "%+v", c)
		assert.Equal(t, c.want, ch.prov.Name(), "%+v", c)
		assert.Equal(t, "lo", ch.devs[ch.cands[0]].Name)
		assert.Equal(t, "GCCL_SOCKET_IFNAME", ch.explicit)
	}
	t.Setenv("GCCL_NET", "verbs")
	reloadEnv()
	_, err := Listen(Config{Rank: 0, CommID: [16]byte{1}, Secret: [16]byte{2}, IfName: "lo"})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Contains(t, err.Error(), `"verbs"`)
	assert.Contains(t, err.Error(), "socket")
	t.Setenv("GCCL_NET", "")
	reloadEnv()
	_, err = Listen(Config{Rank: 0, CommID: [16]byte{1}, Secret: [16]byte{2}, IfName: "=no-such-interface", NetName: "socket"})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument, "an explicit provider that cannot run")
	assert.Contains(t, err.Error(), "GCCL_NET")
}

// TestMixedProvidersRefused: ranks that chose different providers get an
// error naming both instead of a connection.
func TestMixedProvidersRefused(t *testing.T) {
	w := newWorld(t, 2, modes[1], nil)
	other := w.infos[1]
	other.NetName = "ucx"
	_, _, err := w.eps[0].Connect(context.Background(), other, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	assert.Contains(t, err.Error(), `"socket"`)
	assert.Contains(t, err.Error(), `"ucx"`)
}
