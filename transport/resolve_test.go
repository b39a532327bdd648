package transport

import (
	"testing"

	"github.com/gccl/gccl/transport/internal/shm"
	"github.com/stretchr/testify/assert"
)

// TestBuffSizeSetsTheShmRing: GCCL_BUFFSIZE (or NCCL_BUFFSIZE) is the bytes
// of one shared-memory ring; the default keeps shm's own geometry.
func TestBuffSizeSetsTheShmRing(t *testing.T) {
	t.Cleanup(reloadEnv)
	for val, want := range map[string]int{"": shm.DefaultSlotSize, "512K": 64 << 10, "1": 4 << 10, "64M": 8 << 20} {
		t.Setenv("GCCL_BUFFSIZE", val)
		reloadEnv()
		cfg := Config{}.resolve()
		assert.Equal(t, want, cfg.ShmSlotSize, "GCCL_BUFFSIZE=%q", val)
	}
	t.Setenv("GCCL_BUFFSIZE", "")
	t.Setenv("NCCL_BUFFSIZE", "1M")
	reloadEnv()
	assert.Equal(t, 128<<10, Config{}.resolve().ShmSlotSize)
	assert.Equal(t, 1000, Config{ShmSlotSize: 1000}.resolve().ShmSlotSize, "an explicit slot size wins")
}

// TestSocketThreadsAlone: GCCL_SOCKET_NTHREADS counts without
// GCCL_NSOCKS_PERTHREAD (an unset factor is 1).
func TestSocketThreadsAlone(t *testing.T) {
	t.Cleanup(reloadEnv)
	for _, c := range []struct {
		threads, socks string
		want           int
	}{{"", "", DefaultNetSockets}, {"3", "", 3}, {"", "4", 4}, {"2", "3", 6}} {
		t.Setenv("GCCL_SOCKET_NTHREADS", c.threads)
		t.Setenv("GCCL_NSOCKS_PERTHREAD", c.socks)
		reloadEnv()
		assert.Equal(t, c.want, Config{}.resolve().NetSockets, "%+v", c)
	}
}
