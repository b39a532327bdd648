package proxy

import (
	"testing"
	"time"

	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigDefaults: a zero Config takes GCCL_PROXY_SPIN and GCCL_TIMEOUT;
// set fields win, and a negative Spin never spins.
func TestConfigDefaults(t *testing.T) {
	t.Setenv("GCCL_PROXY_SPIN", "")
	t.Setenv("GCCL_TIMEOUT", "")
	env.Reload()
	t.Cleanup(func() { env.Reload() })
	cases := []struct {
		env       string
		cfg       Config
		spin, dur time.Duration
	}{
		{"", Config{}, env.DefaultProxySpin, 5 * time.Minute},
		{"250us", Config{}, 250 * time.Microsecond, 5 * time.Minute},
		{"0", Config{}, 0, 5 * time.Minute},
		{"250us", Config{Spin: 3 * time.Millisecond, Timeout: time.Second}, 3 * time.Millisecond, time.Second},
		{"", Config{Spin: -1}, 0, 5 * time.Minute},
	}
	for _, c := range cases {
		t.Setenv("GCCL_PROXY_SPIN", c.env)
		env.Reload()
		p := New(c.cfg)
		assert.Equal(t, c.spin, p.spin, "GCCL_PROXY_SPIN=%q, Config %+v", c.env, c.cfg)
		assert.Equal(t, c.dur, p.timeout, "Config %+v", c.cfg)
		require.NoError(t, p.Close())
	}
}

// TestLabel: how errors name a connection.
func TestLabel(t *testing.T) {
	assert.Equal(t, "peer 3 channel 12", Label{Peer: 3, Channel: 12}.String())
}
