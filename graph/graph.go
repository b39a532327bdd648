package graph

import (
	"github.com/gccl/gccl/internal/env"
)

// RegisterEnabled reports whether buffers used by captured operations are
// registered for the lifetime of their graph (GCCL_GRAPH_REGISTER, or
// NCCL_GRAPH_REGISTER; on unless set to 0).
func RegisterEnabled() bool { return env.Get().GraphRegister }
