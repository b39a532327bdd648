package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLLPolicy: GCCL_PROTO decides whether the all-reduce's LL one-shot
// path may run and whether it runs past the size threshold.
func TestLLPolicy(t *testing.T) {
	for _, tc := range []struct {
		proto           string
		allowed, forced bool
	}{
		{"", true, false},
		{"LL", true, true},
		{" ll ", true, true},
		{"LL,LL128", true, true},
		{"Simple", false, false},
		{"LL128,Simple", false, false},
		{"LL,Simple", true, false},
		{"simple, ll", true, false},
		{"^LL", false, false},
		{"^Simple", true, true},
		{"^LL128", true, false},
		{"^LL,Simple", false, false},
	} {
		allowed, forced := llPolicy(tc.proto)
		assert.Equal(t, tc.allowed, allowed, "GCCL_PROTO=%q allowed", tc.proto)
		assert.Equal(t, tc.forced, forced, "GCCL_PROTO=%q forced", tc.proto)
	}
}
