package mpiboot

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCUDAAware(t *testing.T) {
	s, err := CUDAAware()
	require.NoError(t, err)
	assert.Contains(t, []CUDASupport{CUDAUnknown, CUDANo, CUDAYes}, s)
	t.Logf("this MPI is CUDA-aware: %v", s)
	assert.Equal(t, "CUDASupport(9)", CUDASupport(9).String())
}
