package ucx

import (
	"testing"

	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/network/networktest"
)

// TestConformance runs the provider through the suite every provider
// passes, over UCX's TCP transport and, where UCX has them, shared memory.
func TestConformance(t *testing.T) {
	requireUCX(t)
	for _, tls := range []string{"tcp", "tcp,shm,self"} {
		t.Run(tls, func(t *testing.T) {
			t.Setenv("UCX_TLS", tls)
			networktest.Run(t, func() network.Provider { return New() })
		})
	}
}
