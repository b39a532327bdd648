// Package env is the one place where gccl reads its environment.
//
// Every variable is read once, on the first call to Get, into a Settings
// value; Reload re-reads them (for tests that set variables with t.Setenv).
// Each variable has a GCCL_ name and, where NCCL has the same knob, the
// NCCL_ name is accepted too; the GCCL_ name wins when both are set.
//
// Vars is the documentation table (name, NCCL alias, default, meaning) from
// which the README and docs are generated, so adding a variable means adding
// a row there and a field to Settings, nothing else.
//
// Logger returns a log/slog logger whose level comes from GCCL_DEBUG
// (VERSION, WARN, INFO, TRACE) and which is silent for subsystems that
// GCCL_DEBUG_SUBSYS does not list.
package env
