package auth

import (
	"encoding/hex"
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

func TestDeriveBindsEverything(t *testing.T) {
	secret, info := []byte("0123456789abcdef"), []byte("key")
	k := Derive(secret, "transport secret", info)
	// HMAC-SHA256(secret, "gccl derive v1" ‖ purpose ‖ 0 ‖ info)[:16], by Python's hmac.
	assert.Equal(t, "b9535f22b8446648bbdb820babbfc0a9", hex.EncodeToString(k[:]))
	assert.Equal(t, k, Derive(secret, "transport secret", info), "every holder of the secret gets the same key")
	assert.NotEqual(t, k, Derive(secret, "transport id", info), "another purpose")
	assert.NotEqual(t, k, Derive(secret, "transport secret", []byte("kez")), "other info")
	assert.NotEqual(t, k, Derive([]byte("0123456789abcdeg"), "transport secret", info), "another secret")
	assert.NotEqual(t, secret, k[:], "not the secret itself")
}
