// Package env is the one place where gccl reads its environment.
//
// Every variable is read once, on the first call to Get, into a Settings
// value; Reload re-reads them (for tests that set variables with t.Setenv).
// Each variable has a GCCL_ name and, where NCCL has the same knob, the
// NCCL_ name is accepted too; the GCCL_ name wins when both are set.
//
// Vars is the documentation table (name, NCCL alias, default, meaning and
// the Settings field it sets) that the README's table follows; a test fails
// when the README lists a variable whose field no library code reads.
//
// A value that does not parse never stops gccl: the default is used and the
// first Get (and every Reload) logs a WARN of subsystem ENV naming the
// variable, the value and what is used instead (Settings.Warnings). The one
// setting whose wrong value could be dangerous, GCCL_NVLS_ENABLE, stays off
// unless exactly 1.
//
// GCCL_ALGO and GCCL_PROTO are parsed here, once, by package algo's
// parsers into Settings.Algos and Settings.Protos: the one vocabulary
// (ring, tree, direct, zerocopy, pipelined; Simple, LL, LL128) that the
// host's choice (algo.Choose) and the GPU's (gpuplan.Choose) both read. A
// list naming something unknown warns and allows everything.
//
// Logger returns a log/slog logger whose level comes from GCCL_DEBUG
// (VERSION, WARN, INFO, TRACE) and which is silent for subsystems that
// GCCL_DEBUG_SUBSYS does not list. VERSION, INFO and TRACE print the
// version once, as an INFO line.
package env
