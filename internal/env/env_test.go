package env

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func clearAll(t *testing.T) {
	for _, v := range Vars {
		t.Setenv(v.Name, "")
		if v.NCCL != "" {
			t.Setenv(v.NCCL, "")
		}
	}
}

func TestDefaults(t *testing.T) {
	clearAll(t)
	s := Reload()
	assert.Equal(t, slog.LevelWarn, s.Debug)
	assert.False(t, s.NVLSEnable)
	assert.True(t, s.CommBlocking)
	assert.Equal(t, 5*time.Minute, s.Timeout)
	assert.Equal(t, "auto", s.Device)
	assert.Equal(t, 4<<20, s.BuffSize)
	assert.Empty(t, s.Warnings)
}

func TestNCCLAliasAndPrecedence(t *testing.T) {
	clearAll(t)
	t.Setenv("NCCL_SOCKET_IFNAME", "eth")
	t.Setenv("NCCL_DEBUG", "INFO")
	t.Setenv("NCCL_BUFFSIZE", "1234")
	s := Reload()
	assert.Equal(t, "eth", s.SocketIfname)
	assert.Equal(t, slog.LevelInfo, s.Debug)
	assert.Equal(t, 1234, s.BuffSize)
	t.Setenv("GCCL_SOCKET_IFNAME", "ib")
	t.Setenv("GCCL_DEBUG", "TRACE")
	s = Reload()
	assert.Equal(t, "ib", s.SocketIfname, "the GCCL_ name wins over the NCCL one")
	assert.Equal(t, LevelTrace, s.Debug)
	assert.Same(t, s, Get())
}

func TestNVLSOnlyWhenExactlyOne(t *testing.T) {
	for val, want := range map[string]bool{"": false, "0": false, "1": true, "2": false, "true": false, "yes": false} {
		clearAll(t)
		t.Setenv("NCCL_NVLS_ENABLE", val)
		assert.Equal(t, want, Reload().NVLSEnable, "NCCL_NVLS_ENABLE=%q", val)
	}
	clearAll(t)
	t.Setenv("NCCL_NVLS_ENABLE", "1")
	t.Setenv("GCCL_NVLS_ENABLE", "0")
	assert.False(t, Reload().NVLSEnable, "GCCL_NVLS_ENABLE=0 must switch NVLS off")
}

func TestBadValuesFallBackWithWarnings(t *testing.T) {
	clearAll(t)
	t.Setenv("GCCL_TIMEOUT", "soon")
	t.Setenv("GCCL_BUFFSIZE", "-3")
	t.Setenv("GCCL_P2P_DISABLE", "maybe")
	t.Setenv("GCCL_DEVICE", "tpu")
	t.Setenv("GCCL_DEBUG", "LOUD")
	s := Reload()
	assert.Equal(t, 5*time.Minute, s.Timeout)
	assert.Equal(t, 4<<20, s.BuffSize)
	assert.False(t, s.P2PDisable)
	assert.Equal(t, "auto", s.Device)
	require.Len(t, s.Warnings, 5)
	for i, name := range []string{"GCCL_BUFFSIZE", "GCCL_P2P_DISABLE", "GCCL_TIMEOUT", "GCCL_DEVICE", "GCCL_DEBUG"} {
		assert.Contains(t, strings.Join(s.Warnings, "\n"), name, "warning %d", i)
	}
}

func TestParsedValues(t *testing.T) {
	clearAll(t)
	t.Setenv("GCCL_TIMEOUT", "750ms")
	t.Setenv("GCCL_COMM_BLOCKING", "0")
	t.Setenv("GCCL_DEVICE", "HOST")
	t.Setenv("NCCL_CHUNKSIZE", "65536")
	t.Setenv("NCCL_SHM_DISABLE", "1")
	s := Reload()
	assert.Equal(t, 750*time.Millisecond, s.Timeout)
	assert.False(t, s.CommBlocking)
	assert.Equal(t, "host", s.Device)
	assert.Equal(t, 65536, s.ChunkSize)
	assert.True(t, s.SHMDisable)
}

// TestSizes: byte counts take K, M and G suffixes; anything else warns and
// keeps the default.
func TestSizes(t *testing.T) {
	for v, want := range map[string]int{"65536": 65536, "64K": 64 << 10, "16m": 16 << 20, "2MiB": 2 << 20, "1G": 1 << 30, "3kb": 3 << 10, "0": 0} {
		clearAll(t)
		t.Setenv("GCCL_GPU_BUFFSIZE", v)
		s := Reload()
		assert.Equal(t, want, s.GPUBuffSize, v)
		assert.Empty(t, s.Warnings, v)
	}
	for _, v := range []string{"-1", "16X", "M", "1.5M", "99999999999G"} {
		clearAll(t)
		t.Setenv("GCCL_GPU_PUSH_MAX", v)
		s := Reload()
		assert.Zero(t, s.GPUPushMax, v)
		require.Len(t, s.Warnings, 1, v)
		assert.Contains(t, s.Warnings[0], "GCCL_GPU_PUSH_MAX", v)
	}
}

func TestSubsysFilter(t *testing.T) {
	clearAll(t)
	t.Setenv("GCCL_DEBUG_SUBSYS", "init,Bootstrap")
	s := Reload()
	assert.True(t, s.SubsysEnabled("INIT"))
	assert.True(t, s.SubsysEnabled("bootstrap"))
	assert.False(t, s.SubsysEnabled("COLL"))
	t.Setenv("GCCL_DEBUG_SUBSYS", "^COLL")
	s = Reload()
	assert.False(t, s.SubsysEnabled("COLL"))
	assert.True(t, s.SubsysEnabled("INIT"))
}

func TestLogger(t *testing.T) {
	clearAll(t)
	t.Setenv("GCCL_DEBUG", "INFO")
	t.Setenv("GCCL_DEBUG_SUBSYS", "INIT")
	Reload()
	var buf bytes.Buffer
	old := SetOutput(&buf)
	defer SetOutput(old)
	Logger("INIT").Info("hello init", "rank", 3)
	Logger("INIT").Debug("hidden debug")
	Logger("COLL").Warn("hidden coll")
	out := buf.String()
	assert.Contains(t, out, "hello init")
	assert.Contains(t, out, "rank=3")
	assert.NotContains(t, out, "hidden")

	buf.Reset()
	t.Setenv("GCCL_DEBUG", "TRACE")
	t.Setenv("GCCL_DEBUG_SUBSYS", "")
	Reload()
	SetOutput(&buf)
	Logger("COLL").Log(t.Context(), LevelTrace, "traced")
	assert.Contains(t, buf.String(), "level=TRACE")

	buf.Reset()
	t.Setenv("GCCL_DEBUG", "NONE")
	Reload()
	SetOutput(&buf)
	Logger("COLL").Error("silent")
	assert.Empty(t, buf.String())
}

func TestVarsTableComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Vars {
		assert.True(t, strings.HasPrefix(v.Name, "GCCL_"), v.Name)
		assert.NotEmpty(t, v.Meaning, v.Name)
		assert.False(t, seen[v.Name], "duplicate %s", v.Name)
		seen[v.Name] = true
	}
}

func TestGetWithoutReload(t *testing.T) {
	// Get must read the environment by itself (no deadlock, no nil).
	once = sync.Once{}
	set(nil)
	require.NotNil(t, Get())
}
