package auth

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProofBindsEverything(t *testing.T) {
	secret, ctx := []byte("0123456789abcdef"), []byte("key")
	l, d := NewNonce(), NewNonce()
	assert.NotEqual(t, l, d, "nonces are fresh")
	mac := Prove(secret, Dialer, ctx, l, d)
	assert.True(t, Check(mac, secret, Dialer, ctx, l, d))
	assert.False(t, Check(mac, secret, Listener, ctx, l, d), "a dialer's proof is not a listener's")
	assert.False(t, Check(mac, secret, Dialer, ctx, NewNonce(), d), "replayed against a new challenge")
	assert.False(t, Check(mac, secret, Dialer, []byte("kez"), l, d), "another context")
	assert.False(t, Check(mac, []byte("0123456789abcdeg"), Dialer, ctx, l, d), "another secret")
}
