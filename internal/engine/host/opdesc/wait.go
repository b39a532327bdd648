package opdesc

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gccl/gccl"
)

// WaitError is a wait on peers that ended with gccl.ErrTimeout: this rank
// ran Op and was waiting for Peers (each with a note on its progress, e.g.
// "no data from it since op #16") when its deadline passed or a peer
// relayed its own timeout. The host backend resolves it into the rank(s)
// that made no progress (package host, stall.go).
type WaitError struct {
	Op    string         // the operation, as Desc.String says it
	Peers []int          // the ranks waited for, ascending
	Notes map[int]string // per peer: what this rank last heard of it
	Err   error          // the wait's own error
}

// Waiting returns the ErrTimeout of a wait on peer that ended with err
// (a timeout), with note on the peer's progress.
func Waiting(op string, peer int, note string, err error) *WaitError {
	return &WaitError{Op: op, Peers: []int{peer}, Notes: map[int]string{peer: note}, Err: err}
}

// SendNote is the note on a peer that did not take this rank's data.
func SendNote() string { return "it has not taken this rank's data (its receive buffer is full)" }

func (e *WaitError) Error() string {
	return fmt.Sprintf("%s: waiting for %s: %v", e.Op, Ranks(e.Peers), e.Err)
}

// Unwrap returns the wait's own error.
func (e *WaitError) Unwrap() error { return e.Err }

// Is makes a WaitError an ErrTimeout.
func (e *WaitError) Is(target error) bool { return target == gccl.ErrTimeout }

// Merge joins the peers of every WaitError among errs into the first one
// (other errors are ignored); nil if there is none.
func Merge(errs ...error) *WaitError {
	var out *WaitError
	for _, err := range errs {
		if err == nil {
			continue
		}
		var w *WaitError // declared here: errors.As puts it on the heap
		if !errors.As(err, &w) {
			continue
		}
		if out == nil {
			out = &WaitError{Op: w.Op, Notes: map[int]string{}, Err: w.Err}
		}
		for _, p := range w.Peers {
			if !slices.Contains(out.Peers, p) {
				out.Peers = append(out.Peers, p)
				out.Notes[p] = w.Notes[p]
			}
		}
	}
	if out != nil {
		slices.Sort(out.Peers)
	}
	return out
}

// Ranks names a set of ranks: "rank 2", "ranks 1 and 2", "ranks 1, 2 and 3".
func Ranks(rs []int) string {
	switch len(rs) {
	case 0:
		return "no rank"
	case 1:
		return fmt.Sprintf("rank %d", rs[0])
	}
	s := "ranks "
	for i, r := range rs {
		switch {
		case i == len(rs)-1:
			s += " and "
		case i > 0:
			s += ", "
		}
		s += fmt.Sprint(r)
	}
	return s
}

// Label is the short name of the operation in notes on a peer's progress:
// "op #16" for a collective, "Send #3 after collective #16" for a
// point-to-point message.
func (d Desc) Label() string {
	if d.kind.IsP2P() {
		return fmt.Sprintf("its Send #%d to this rank (after collective #%d)", d.seq, d.epoch)
	}
	return fmt.Sprintf("op #%d", d.seq)
}
