package badinput

import (
	"errors"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// initCase is a case of class settings: a 1-rank InitRankConfig with cfg,
// which gccl refuses.
func initCase(name, did, arg string, code gccl.Result, words []string, cfg comm.Config) badCase {
	return badCase{name: name, class: settings, did: did, code: code, arg: arg, words: words, then: "no communicator",
		run: func(t *testing.T) error {
			id, err := comm.NewUniqueID()
			require.NoError(t, err)
			c, err := comm.InitRankConfig(1, id, 0, &cfg)
			assert.Nil(t, c)
			return err
		}}
}

// envCase is a case of class settings: variable set to value, which does
// not parse: a warning naming it (Settings.Warnings, logged once as a WARN)
// and the default used; a 2-rank AllReduce then gives the right sum.
func envCase(name, variable, value, using string, check func(t *testing.T, s *env.Settings)) badCase {
	return badCase{name: name, class: settings, code: gccl.Success,
		did:  variable + "=" + value,
		then: "a WARN (subsystem ENV) “" + variable + "=\"" + value + "\" is not … using " + using + "”; a 2-rank AllReduce gives the right sum",
		run: func(t *testing.T) error {
			s := setEnv(t, variable, value)
			var found bool
			for _, w := range s.Warnings {
				if w.Var == variable {
					found = true
					assert.Equal(t, value, w.Value)
					assert.Equal(t, using, w.Using)
				}
			}
			require.True(t, found, "no warning for %s in %v", variable, s.Warnings)
			if check != nil {
				check(t, s)
			}
			newWorld(t, 2, 10*time.Second).mustBeUsable(t)
			return nil
		}}
}

// setEnv sets variable for the test and reloads the settings (restored
// when the test ends).
func setEnv(t *testing.T, variable, value string) *env.Settings {
	t.Setenv(variable, value)
	t.Cleanup(func() { env.Reload() })
	return env.Reload()
}

// noGPU makes device.Open(device.CUDA, n) find no driver for the test.
func noGPU(t *testing.T) {
	restore := devlink.SetLoader(func() (cuda.Driver, error) { return nil, errors.New("libcuda.so.1: not found (test)") })
	t.Cleanup(restore)
}

func settingCases() []badCase {
	ia := gccl.InvalidArgument
	return []badCase{
		initCase("config-negative-timeout", "comm.Config{Timeout: -1s}", "config.Timeout", ia, []string{"negative timeout -1s; use 0 for the default"},
			comm.Config{Timeout: -time.Second}),
		initCase("config-negative-device", "comm.Config{Device: -1, DeviceSet: true}", "config.Device", ia, []string{"device ordinal -1 is negative"},
			comm.Config{Device: -1, DeviceSet: true}),
		initCase("config-unknown-backend", "comm.Config{Backend: 42}", "config.Backend", ia, []string{"unknown backend", "use device.Auto, Host or CUDA"},
			comm.Config{Backend: 42}),
		{name: "config-cuda-without-gpu", class: settings, code: gccl.SystemError, arg: "device",
			did:   "comm.Config{Backend: device.CUDA} on a machine with no GPU driver",
			words: []string{"no GPU driver or device on this machine", "GCCL_DEVICE=host"}, then: "no communicator",
			run: func(t *testing.T) error {
				noGPU(t)
				id, err := comm.NewUniqueID()
				require.NoError(t, err)
				_, err = comm.InitRankConfig(1, id, 0, &comm.Config{Backend: device.CUDA, Timeout: 5 * time.Second})
				return err
			}},
		{name: "env-device-cuda-without-gpu", class: settings, code: gccl.SystemError, arg: "device",
			did:   "GCCL_DEVICE=cuda on a machine with no GPU driver",
			words: []string{"no GPU driver or device on this machine"}, then: "no communicator",
			run: func(t *testing.T) error {
				noGPU(t)
				setEnv(t, "GCCL_DEVICE", "cuda")
				id, err := comm.NewUniqueID()
				require.NoError(t, err)
				_, err = comm.InitRankConfig(1, id, 0, &comm.Config{Timeout: 5 * time.Second})
				return err
			}},
		envCase("env-algo-unknown", "GCCL_ALGO", "bogus", "every algorithm", func(t *testing.T, s *env.Settings) {
			assert.Equal(t, algo.AllAlgorithms, s.Algos)
		}),
		envCase("env-proto-unknown", "GCCL_PROTO", "LL256", "every protocol", nil),
		envCase("env-timeout-unitless", "GCCL_TIMEOUT", "30", "5m0s", func(t *testing.T, s *env.Settings) {
			assert.Equal(t, 5*time.Minute, s.Timeout)
		}),
		envCase("env-nvls-not-boolean", "GCCL_NVLS_ENABLE", "2", "0 (NVLS off)", func(t *testing.T, s *env.Settings) {
			assert.False(t, s.NVLSEnable, "NVLS stays off")
		}),
		envCase("env-buffsize-garbage", "GCCL_BUFFSIZE", "lots", "2097152", nil),
		envCase("env-check-pointers-garbage", "GCCL_CHECK_POINTERS", "maybe", "the backend's default", func(t *testing.T, s *env.Settings) {
			assert.Nil(t, s.CheckPointers)
			w := newWorld(t, 1, 10*time.Second)
			p := w.alloc(t, 0, 4096)
			expect(t, gccl.InvalidArgument, "recvbuff", []string{"runs 4096 bytes past"},
				coll.AllReduce(w.comms[0], p, p, 2048, gccl.Int32, gccl.Sum, w.streams[0]))
		}),
	}
}
