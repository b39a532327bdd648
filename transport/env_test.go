package transport

import "github.com/gccl/gccl/internal/env"

func reloadEnv() { env.Reload() }
