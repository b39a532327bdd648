package graph

import (
	"testing"

	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
)

func TestRegisterEnabled(t *testing.T) {
	t.Cleanup(func() { env.Reload() })
	for _, tc := range []struct {
		name, val string
		want      bool
	}{{"NCCL_GRAPH_REGISTER", "0", false}, {"GCCL_GRAPH_REGISTER", "0", false}, {"GCCL_GRAPH_REGISTER", "1", true}} {
		t.Setenv("GCCL_GRAPH_REGISTER", "")
		t.Setenv("NCCL_GRAPH_REGISTER", "")
		t.Setenv(tc.name, tc.val)
		env.Reload()
		assert.Equal(t, tc.want, RegisterEnabled(), "%s=%s", tc.name, tc.val)
	}
}
