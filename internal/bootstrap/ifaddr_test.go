package bootstrap

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenIPHonoursIfname(t *testing.T) {
	t.Setenv("GCCL_SOCKET_IFNAME", "=lo")
	env.Reload()
	defer func() { t.Setenv("GCCL_SOCKET_IFNAME", ""); env.Reload() }()
	ip, err := ListenIP()
	require.NoError(t, err)
	assert.True(t, ip.IsLoopback(), "%v", ip)

	t.Setenv("GCCL_SOCKET_IFNAME", "=no-such-interface")
	env.Reload()
	_, err = ListenIP()
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)

	t.Setenv("GCCL_SOCKET_IFNAME", "")
	t.Setenv("NCCL_SOCKET_IFNAME", "^lo")
	env.Reload()
	if ip, err := ListenIP(); err == nil { // machines with only loopback have no answer here
		assert.False(t, ip.IsLoopback(), "%v", ip)
	}
}
