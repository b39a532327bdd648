package topo

import (
	"testing"

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
