package runner

import (
	"testing"

	"github.com/gccl/gccl/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
