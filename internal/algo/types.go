package algo

import (
	"fmt"
	"strings"
)

// Kind is an operation: one of the five collectives or a point-to-point
// send or receive. It is the only operation enum of gccl; both backends and
// the public API's operations map onto it.
type Kind int

// The operations.
const (
	AllReduce Kind = iota
	Broadcast
	Reduce
	AllGather
	ReduceScatter
	// The point-to-point operations (package p2p's Send and Recv). Not
	// plain Send and Recv: those are the step operations of a Plan.
	P2PSend
	P2PRecv
	// NumKinds counts the operations: every valid Kind is below it.
	NumKinds
)

var kindNames = [NumKinds]string{"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "Send", "Recv"}

func (k Kind) String() string {
	if k >= 0 && k < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind returns the kind named s (case-insensitive).
func ParseKind(s string) (Kind, error) {
	for k := range NumKinds {
		if strings.EqualFold(s, k.String()) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown operation %q (want %s)", s, strings.Join(kindNames[:], ", "))
}

// Valid reports whether k is a known operation.
func (k Kind) Valid() bool { return k >= 0 && k < NumKinds }

// IsCollective reports whether k is one of the five collectives.
func (k Kind) IsCollective() bool { return k >= 0 && k < P2PSend }

// IsP2P reports whether k is a point-to-point operation.
func (k Kind) IsP2P() bool { return k == P2PSend || k == P2PRecv }

// Reduces reports whether the collective applies a reduction operator.
func (k Kind) Reduces() bool { return k == AllReduce || k == Reduce || k == ReduceScatter }

// Rooted reports whether the collective has a root rank.
func (k Kind) Rooted() bool { return k == Broadcast || k == Reduce }

// StepOp is what one step does.
type StepOp uint8

// The step operations. "⊕" is the collective's reduction operator.
const (
	Send           StepOp = iota + 1 // To ← Src
	Recv                             // Dst ← From
	RecvReduce                       // Dst ← Src ⊕ From
	RecvReduceSend                   // Dst ← Src ⊕ From; To ← Dst
	RecvCopySend                     // Dst ← From; To ← Dst
	Copy                             // Dst ← Src
	LocalReduce                      // Dst ← Dst ⊕ Src
)

var stepNames = [...]string{"?", "send", "recv", "recvreduce", "recvreducesend", "recvcopysend", "copy", "localreduce"}

func (o StepOp) String() string {
	if int(o) < len(stepNames) {
		return stepNames[o]
	}
	return fmt.Sprintf("StepOp(%d)", int(o))
}

// Receives reports whether the step takes data from a peer.
func (o StepOp) Receives() bool {
	return o == Recv || o == RecvReduce || o == RecvReduceSend || o == RecvCopySend
}

// Sends reports whether the step passes data to a peer.
func (o StepOp) Sends() bool { return o == Send || o == RecvReduceSend || o == RecvCopySend }

// Reads reports whether the step reads Src.
func (o StepOp) Reads() bool {
	return o == Send || o == RecvReduce || o == RecvReduceSend || o == Copy || o == LocalReduce
}

// Writes reports whether the step writes Dst.
func (o StepOp) Writes() bool { return o != Send }

// Buffer names one of a rank's buffers.
type Buffer uint8

// The buffers a step can refer to.
const (
	NoBuf Buffer = iota
	SendBuf
	RecvBuf
	ScratchBuf
)

var bufNames = [...]string{"-", "send", "recv", "scratch"}

func (b Buffer) String() string {
	if int(b) < len(bufNames) {
		return bufNames[b]
	}
	return fmt.Sprintf("Buffer(%d)", int(b))
}

// Ref is a byte offset in one of the rank's buffers.
type Ref struct {
	Buf Buffer
	Off int
}

// Step is one action of one rank. Len bytes are moved; From and To are peer
// ranks (-1 where unused); Src and Dst name local byte ranges of length Len.
type Step struct {
	Op       StepOp
	From, To int
	Src, Dst Ref
	Len      int
}

func (s Step) String() string {
	var b strings.Builder
	b.WriteString(s.Op.String())
	if s.Op.Receives() {
		fmt.Fprintf(&b, " from=%d", s.From)
	}
	if s.Op.Sends() {
		fmt.Fprintf(&b, " to=%d", s.To)
	}
	if s.Op.Reads() && s.Op != Send || s.Op == Send && s.Src.Buf != NoBuf {
		fmt.Fprintf(&b, " src=%s[%d:%d]", s.Src.Buf, s.Src.Off, s.Src.Off+s.Len)
	}
	if s.Op.Writes() {
		fmt.Fprintf(&b, " dst=%s[%d:%d]", s.Dst.Buf, s.Dst.Off, s.Dst.Off+s.Len)
	}
	return b.String()
}

// Plan is one rank's schedule for one collective.
type Plan struct {
	Kind         Kind
	Algo         Algorithm
	NRanks, Rank int
	ScratchBytes int // size of the scratch buffer the steps use
	Steps        []Step
}

// shift moves every ref into the send and receive buffers off bytes on
// (a channel's part, built from offset 0); scratch refs stay.
func (p *Plan) shift(off int) {
	if off == 0 {
		return
	}
	move := func(r *Ref) {
		if r.Buf == SendBuf || r.Buf == RecvBuf {
			r.Off += off
		}
	}
	for i := range p.Steps {
		move(&p.Steps[i].Src)
		move(&p.Steps[i].Dst)
	}
}

// Peers returns the ranks this plan sends to and receives from, each sorted.
func (p *Plan) Peers() (sendTo, recvFrom []int) {
	seenTo := make([]bool, p.NRanks)
	seenFrom := make([]bool, p.NRanks)
	for _, s := range p.Steps {
		if s.Op.Sends() {
			seenTo[s.To] = true
		}
		if s.Op.Receives() {
			seenFrom[s.From] = true
		}
	}
	for r := range p.NRanks {
		if seenTo[r] {
			sendTo = append(sendTo, r)
		}
		if seenFrom[r] {
			recvFrom = append(recvFrom, r)
		}
	}
	return sendTo, recvFrom
}

// String prints the plan, one step per line.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rank %d/%d %s %s scratch=%d\n", p.Rank, p.NRanks, p.Kind, p.Algo, p.ScratchBytes)
	for _, s := range p.Steps {
		b.WriteString("  " + s.String() + "\n")
	}
	return b.String()
}
