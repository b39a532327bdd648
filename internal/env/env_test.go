package env

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/algo"
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
	assert.Equal(t, 2<<20, s.BuffSize)
	assert.False(t, s.SocketChecksum, "payload checksums are opt-in")
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
	assert.Equal(t, 2<<20, s.BuffSize)
	assert.False(t, s.P2PDisable)
	assert.Equal(t, "auto", s.Device)
	require.Len(t, s.Warnings, 5)
	var names []string
	for _, w := range s.Warnings {
		names = append(names, w.Var)
	}
	assert.ElementsMatch(t, []string{"GCCL_BUFFSIZE", "GCCL_P2P_DISABLE", "GCCL_TIMEOUT", "GCCL_DEVICE", "GCCL_DEBUG"}, names)
}

// TestBadValuesAreLogged: every value that does not parse is a WARN naming
// the variable (under the name it was set), the value and what is used.
func TestBadValuesAreLogged(t *testing.T) {
	cases := []struct{ name, val, using string }{
		{"GCCL_TIMEOUT", "abc", "5m0s"},
		{"GCCL_TIMEOUT", "30", "5m0s"},
		{"GCCL_TIMEOUT", "-5s", "5m0s"},
		{"GCCL_COMM_BLOCKING", "maybe", "using 1"},
		{"NCCL_COMM_BLOCKING", "maybe", "using 1"},
		{"GCCL_DEVICE", "gpu", "using auto"},
		{"GCCL_DEBUG", "BOGUS", "using WARN"},
		{"GCCL_NVLS_ENABLE", "true", "NVLS off"},
		{"GCCL_PROTO", "Simpel", "every protocol"},
		{"GCCL_ALGO", "rung", "every algorithm"},
		{"NCCL_ALGO", "^ring,bogus", "every algorithm"},
		{"GCCL_CHUNKSIZE", "big", "using 0"},
		{"GCCL_GPU_LL_MAX", "1.5M", "using 0"},
		{"GCCL_HOST_SPIN", "-5us", "using auto"},
		{"GCCL_HOST_SPIN", "50", "using auto"},
		{"GCCL_PROXY_SPIN", "50", "using 1ms"},
		{"GCCL_PROXY_SPIN", "-1ms", "using 1ms"},
	}
	for _, c := range cases {
		clearAll(t)
		t.Setenv(c.name, c.val)
		var buf bytes.Buffer
		old := SetOutput(&buf)
		s := Reload()
		SetOutput(old)
		require.Len(t, s.Warnings, 1, "%s=%s", c.name, c.val)
		line := buf.String()
		assert.Contains(t, line, "level=WARN", "%s=%s", c.name, c.val)
		assert.Contains(t, line, c.name+`=\"`+c.val+`\"`, "%s=%s", c.name, c.val)
		assert.Contains(t, line, c.using, "%s=%s", c.name, c.val)
		assert.Contains(t, line, "subsys=ENV")
	}
	clearAll(t)
	var buf bytes.Buffer
	old := SetOutput(&buf)
	Reload()
	SetOutput(old)
	assert.Empty(t, buf.String(), "good settings log nothing")
}

// TestHostSpin: GCCL_HOST_SPIN is a duration of zero or more, or auto (-1).
func TestHostSpin(t *testing.T) {
	for val, want := range map[string]time.Duration{"": -1, "auto": -1, "0": 0, "0s": 0, "20us": 20 * time.Microsecond, "1ms": time.Millisecond} {
		clearAll(t)
		if val != "" {
			t.Setenv("GCCL_HOST_SPIN", val)
		}
		s := Reload()
		assert.Equal(t, want, s.HostSpin, "GCCL_HOST_SPIN=%q", val)
		assert.Empty(t, s.Warnings, "GCCL_HOST_SPIN=%q", val)
	}
}

// TestProxySpin: GCCL_PROXY_SPIN is a duration of zero or more, 1ms when
// unset.
func TestProxySpin(t *testing.T) {
	for val, want := range map[string]time.Duration{"": time.Millisecond, "0": 0, "0s": 0, "200us": 200 * time.Microsecond, "2ms": 2 * time.Millisecond} {
		clearAll(t)
		if val != "" {
			t.Setenv("GCCL_PROXY_SPIN", val)
		}
		s := Reload()
		assert.Equal(t, want, s.ProxySpin, "GCCL_PROXY_SPIN=%q", val)
		assert.Empty(t, s.Warnings, "GCCL_PROXY_SPIN=%q", val)
	}
}

// TestVersionIsInfo: GCCL_DEBUG=VERSION prints the version once as an INFO
// line while the level stays WARN; INFO prints it too; WARN does not.
func TestVersionIsInfo(t *testing.T) {
	for val, want := range map[string]bool{"VERSION": true, "INFO": true, "WARN": false, "NONE": false} {
		clearAll(t)
		t.Setenv("GCCL_DEBUG", val)
		Reload()
		versionOnce = sync.Once{}
		var buf bytes.Buffer
		old := SetOutput(&buf)
		Logger("INIT").Info("an info line")
		Logger("COLL").Warn("a warning")
		SetOutput(old)
		out := buf.String()
		assert.Equal(t, want, strings.Contains(out, `level=INFO msg="gccl version `+Version+`"`), "GCCL_DEBUG=%s: %s", val, out)
		assert.Equal(t, 1, strings.Count(out, "gccl version")*btoi(want)+btoi(!want), val)
		if val == "VERSION" {
			assert.NotContains(t, out, "an info line", "VERSION keeps the level at WARN")
			assert.Contains(t, out, "a warning")
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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

// TestAlgoAndProtoLists: GCCL_ALGO and GCCL_PROTO (or their NCCL names)
// are parsed once into the sets both backends read; unset means all, and a
// list that does not parse warns and means all too.
func TestAlgoAndProtoLists(t *testing.T) {
	clearAll(t)
	s := Reload()
	assert.Equal(t, algo.AllAlgorithms, s.Algos)
	assert.Equal(t, algo.AllProtocols, s.Protos)

	t.Setenv("NCCL_ALGO", "Ring,NVLS")
	t.Setenv("NCCL_PROTO", "^LL")
	s = Reload()
	assert.Equal(t, algo.Allowed(1<<algo.Ring), s.Algos)
	assert.Equal(t, algo.Protocols(1<<algo.Simple|1<<algo.LL128), s.Protos)
	assert.Empty(t, s.Warnings)

	t.Setenv("GCCL_ALGO", "^zerocopy,pipelined")
	t.Setenv("GCCL_PROTO", "ll")
	s = Reload()
	assert.Equal(t, "ring,tree,direct", s.Algos.String(), "the GCCL_ name wins")
	assert.True(t, s.Protos.LLForced())

	t.Setenv("GCCL_ALGO", "ring,,tree")
	t.Setenv("GCCL_PROTO", "LL,Fast")
	s = Reload()
	assert.Equal(t, algo.AllAlgorithms, s.Algos)
	assert.Equal(t, algo.AllProtocols, s.Protos)
	require.Len(t, s.Warnings, 2)
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
		assert.Equal(t, "GCCL_GPU_PUSH_MAX", s.Warnings[0].Var, v)
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
	read := map[string]bool{}
	load(func(name string) (string, bool) { read[name] = true; return "", false })
	settings := reflect.TypeFor[Settings]()
	for _, v := range Vars {
		assert.True(t, strings.HasPrefix(v.Name, "GCCL_"), v.Name)
		assert.NotEmpty(t, v.Meaning, v.Name)
		assert.False(t, seen[v.Name], "duplicate %s", v.Name)
		seen[v.Name] = true
		assert.True(t, read[v.Name], "load never reads %s", v.Name)
		if v.NCCL != "" {
			assert.True(t, read[v.NCCL], "load never reads %s", v.NCCL)
		}
		_, ok := settings.FieldByName(v.Field)
		assert.True(t, ok, "%s: Settings has no field %q", v.Name, v.Field)
	}
	for name := range read {
		if strings.HasPrefix(name, "GCCL_") {
			assert.True(t, seen[name], "load reads %s, which Vars does not document", name)
		}
	}
}

func TestGetWithoutReload(t *testing.T) {
	// Get must read the environment by itself (no deadlock, no nil).
	once = sync.Once{}
	set(nil)
	require.NotNil(t, Get())
}
