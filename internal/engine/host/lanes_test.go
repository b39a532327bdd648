package host

import (
	"context"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/wait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLaneErr: a lane that failed because its peer is gone cancels its
// siblings; their cancelled waits must not turn the group's error into a
// stall (a TimeoutError naming a live rank). A real timeout still does.
func TestLaneErr(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	siblingWait := &opdesc.WaitError{Op: "Send", Peers: []int{2}, Notes: map[int]string{2: opdesc.SendNote()},
		Err: wait.CtxErr(cancelled, time.Time{}, "sending")}
	require.Equal(t, gccl.TimeoutError, gccl.Code(siblingWait.Err), "a cancelled wait reads as a timeout")
	dead := gccl.Errorf(gccl.RemoteError, "peer", "receiving from rank 0: the sending peer closed its end")

	err := laneErr("a group", []error{dead, siblingWait})
	assert.Same(t, dead, err, "the dead peer's error, not the sibling's cancelled wait")

	expired, cancel2 := context.WithTimeout(t.Context(), 0)
	defer cancel2()
	<-expired.Done()
	stall := &opdesc.WaitError{Op: "Recv", Peers: []int{3}, Err: wait.CtxErr(expired, time.Time{}, "receiving")}
	err = laneErr("a group", []error{nil, stall, siblingWait})
	var w *opdesc.WaitError
	require.ErrorAs(t, err, &w, "a lane whose deadline passed is a stall")
	assert.Equal(t, []int{3}, w.Peers, "only the stalled lane's peer is named")
	assert.Equal(t, "a group", w.Op)
}
