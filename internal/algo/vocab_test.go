package algo

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKindNames(t *testing.T) {
	for k := range NumKinds {
		got, err := ParseKind(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
		assert.Equal(t, k.IsP2P(), !k.IsCollective(), k)
		assert.True(t, k.Valid())
	}
	_, err := ParseKind("alltoall")
	assert.Error(t, err)
	assert.Equal(t, "Kind(7)", NumKinds.String())
	assert.False(t, NumKinds.Valid())
	assert.False(t, P2PSend.Reduces() || P2PRecv.Rooted())
}

func TestParseProtocols(t *testing.T) {
	for in, want := range map[string]Protocols{
		"":           AllProtocols,
		"LL":         1 << LL,
		"simple,ll":  1<<Simple | 1<<LL,
		"^LL":        1<<Simple | 1<<LL128,
		"^Simple":    1<<LL | 1<<LL128,
		" LL128 ":    1 << LL128,
		"^ll,simple": 1 << LL128,
	} {
		got, err := ParseProtocols(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"LL256", "LL,,Simple", "^", "auto"} {
		_, err := ParseProtocols(bad)
		assert.Error(t, err, bad)
	}
	// LL is forced exactly when the list keeps LL and leaves out Simple.
	forced := map[string]bool{"": false, "LL": true, "^Simple": true, "LL,LL128": true, "LL,Simple": false, "^LL": false, "LL128": false}
	for in, want := range forced {
		p, err := ParseProtocols(in)
		require.NoError(t, err)
		assert.Equal(t, want, p.LLForced(), in)
	}
}

func TestSetStrings(t *testing.T) {
	assert.Equal(t, "ring,tree,direct,zerocopy,pipelined", AllAlgorithms.String())
	assert.Equal(t, "Simple,LL,LL128", AllProtocols.String())
	for _, s := range []string{"ring", "tree,zerocopy", "direct,pipelined"} {
		a, err := ParseAllowed(s)
		require.NoError(t, err)
		assert.Equal(t, s, a.String(), "String parses back")
	}
	assert.Equal(t, "Protocol(9)", Protocol(9).String())
}

// TestChooseHonoursList: the host's choice is an allowed algorithm with a
// schedule for the kind, or Ring, the host's general one, when the list
// allows none (pipelined, for one, has no host schedule).
func TestChooseHonoursList(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		kind := Kind(rng.IntN(int(P2PSend)))
		allowed := Allowed(rng.IntN(int(AllAlgorithms) + 1))
		bytes, n := rng.IntN(1<<30), 2+rng.IntN(15)
		got := Choose(kind, bytes, n, []Link{SHMLink, NetLink}[rng.IntN(2)], allowed)
		require.True(t, Supports(kind, got), "%v %v", kind, got)
		usable := false
		for _, a := range []Algorithm{Ring, Tree, Direct} {
			usable = usable || allowed.Has(a) && Supports(kind, a)
		}
		if usable {
			require.True(t, allowed.Has(got), "%v allowed %v: chose %v", kind, allowed, got)
		} else {
			require.Equal(t, Ring, got, "%v allowed %v", kind, allowed)
		}
	}
	assert.Equal(t, Ring, Choose(AllReduce, 8, 4, SHMLink, 1<<Pipelined))
	assert.Equal(t, Direct, Choose(AllReduce, 8, 4, SHMLink, AllAlgorithms))
}
