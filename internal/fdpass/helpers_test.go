package fdpass

import (
	"testing"
	"time"

	"github.com/gccl/gccl/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
