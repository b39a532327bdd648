package device

import (
	"errors"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGPU is a Device that only reports its kind; the host device does the rest.
type fakeGPU struct{ Device }

func (fakeGPU) Kind() Kind { return CUDA }

func withEnv(t *testing.T, device string) {
	t.Setenv("GCCL_DEVICE", device)
	env.Reload()
	t.Cleanup(func() { env.Reload() })
}

// withCUDAOpener installs open (nil: none) for the test, restoring the
// opener the CUDA backend registered afterwards.
func withCUDAOpener(t *testing.T, open Opener) {
	prev := opener(CUDA)
	require.NoError(t, RegisterOpener(CUDA, open))
	t.Cleanup(func() { require.NoError(t, RegisterOpener(CUDA, prev)) })
}

func TestOpenHost(t *testing.T) {
	d, err := Open(Host, 3)
	require.NoError(t, err)
	assert.Equal(t, Host, d.Kind())
	assert.Equal(t, 3, d.Ordinal())
}

func TestOpenBadArguments(t *testing.T) {
	_, err := Open(Host, -1)
	requireArg(t, err, gccl.ErrInvalidArgument, "ordinal")
	_, err = Open(Kind(9), 0)
	requireArg(t, err, gccl.ErrInvalidArgument, "kind")
	requireArg(t, RegisterOpener(Auto, nil), gccl.ErrInvalidArgument, "kind")
	_, err = NewHost(-2, 0)
	requireArg(t, err, gccl.ErrInvalidArgument, "ordinal")
}

func TestOpenCUDAWithoutSupport(t *testing.T) {
	withEnv(t, "auto")
	withCUDAOpener(t, nil)
	_, err := Open(CUDA, 0)
	require.ErrorIs(t, err, ErrNoDriver)
	require.ErrorIs(t, err, gccl.ErrSystem)
	d, err := Open(Auto, 0)
	require.NoError(t, err)
	assert.Equal(t, Host, d.Kind())
}

func TestAutoChoice(t *testing.T) {
	host, _ := NewHost(0, 0)
	gpu := fakeGPU{host}
	other := gccl.Errorf(gccl.InvalidArgument, "ordinal", "no GPU 7")
	noDriver := gccl.Errorf(gccl.SystemError, "device", "libcuda.so.1 missing: %w", ErrNoDriver)
	cases := []struct {
		env     string
		openErr error
		want    Kind
		wantErr error
	}{
		{"auto", nil, CUDA, nil},
		{"auto", noDriver, Host, nil},
		{"auto", other, 0, other},
		{"host", nil, Host, nil},
		{"cuda", nil, CUDA, nil},
		{"cuda", noDriver, 0, ErrNoDriver},
	}
	for _, c := range cases {
		withEnv(t, c.env)
		withCUDAOpener(t, func(ordinal int) (Device, error) {
			if c.openErr != nil {
				return nil, c.openErr
			}
			return gpu, nil
		})
		d, err := Open(Auto, 0)
		if c.wantErr != nil {
			require.ErrorIs(t, err, c.wantErr, "GCCL_DEVICE=%s open error %v", c.env, c.openErr)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, c.want, d.Kind(), "GCCL_DEVICE=%s open error %v", c.env, c.openErr)
	}
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "auto", Auto.String())
	assert.Equal(t, "host", Host.String())
	assert.Equal(t, "cuda", CUDA.String())
	assert.Equal(t, "Kind(7)", Kind(7).String())
}

func requireArg(t *testing.T, err, code error, arg string) {
	t.Helper()
	require.ErrorIs(t, err, code)
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge))
	assert.Equal(t, arg, ge.Arg)
}
