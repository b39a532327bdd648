// Package badinput is gccl's bad-input table: one table-driven test
// (TestBadInput) of what a caller can get wrong — buffers outside their
// allocations, bad counts, types, operators, roots and peers, groups,
// nil and closed communicators, bad settings, registration misuse,
// garbage unique IDs, ranks that disagree, dead or stalled peers — and
// what gccl answers to each: the exact error code, the argument it names
// and key words of its message, and, where data is involved, that outputs
// are right or untouched. No case may crash, panic or hang: each runs
// under a deadline, on the host backend in this process (several ranks as
// goroutines, each with a real communicator).
//
// The test renders the table into docs/reliability.md between the
// markers <!-- badinput:begin --> and <!-- badinput:end -->, and fails
// when the document's table differs from what the cases declare, so the
// document cannot go stale: after changing a case, run
//
//	go test ./test/badinput -update
package badinput
