package topo

import (
	"testing"

	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostHashStableAndNonZero(t *testing.T) {
	h := HostHash()
	require.NotZero(t, h)
	assert.Equal(t, h, HostHash())
	assert.Equal(t, h, HashIdentity(Identity()))
}

func TestHashIdentityDistinguishesHosts(t *testing.T) {
	seen := map[uint64]string{}
	for _, id := range []string{"a/1", "a/2", "b/1", "", "node01/eec1f590", "node01/eec1f591"} {
		h := HashIdentity(id)
		require.NotZero(t, h)
		if prev, dup := seen[h]; dup {
			t.Fatalf("identities %q and %q hash alike", prev, id)
		}
		seen[h] = id
	}
}

func TestSameHost(t *testing.T) {
	assert.True(t, SameHost(5, 5))
	assert.False(t, SameHost(5, 6))
	assert.False(t, SameHost(0, 0), "unknown hosts must not be taken as the same host")
}

// TestIdentityFromEnv: GCCL_HOSTID (or NCCL_HOSTID) replaces the identity,
// read through internal/env like every other variable.
func TestIdentityFromEnv(t *testing.T) {
	t.Cleanup(func() { env.Reload() })
	t.Setenv("GCCL_HOSTID", "")
	t.Setenv("NCCL_HOSTID", "nodeA")
	env.Reload()
	assert.Equal(t, "nodeA", Identity())
	t.Setenv("GCCL_HOSTID", "nodeB")
	env.Reload()
	assert.Equal(t, "nodeB", Identity(), "the GCCL_ name wins")
	t.Setenv("GCCL_HOSTID", "")
	t.Setenv("NCCL_HOSTID", "")
	env.Reload()
	assert.Contains(t, Identity(), "/", "host name and boot id")
}
