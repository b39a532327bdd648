package clock

import (
	"errors"
	"fmt"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/wait"
)

// Timer times work on a GPU stream with two CUDA events recorded around
// it, as nccl-tests does: the time is the GPU's, free of the host's polling.
// gccl and the NCCL baseline are both timed by it, on the same stream.
type Timer struct {
	dev        *device.CUDADevice
	drv        cuda.Driver
	stream     cuda.Stream
	start, end cuda.Event
	timeout    time.Duration
}

// NewTimer makes the events of a timer of stream s on dev; every wait for
// the stream ends at the timeout.
func NewTimer(dev *device.CUDADevice, s gccl.Stream, timeout time.Duration) (*Timer, error) {
	if timeout <= 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "timeout", "the event timer needs a deadline > 0, got %v", timeout)
	}
	drv, _ := devlink.Driver(dev)
	t := &Timer{dev: dev, drv: drv, stream: cuda.Stream(s), timeout: timeout}
	err := dev.Do(func() (err error) {
		if t.start, err = t.drv.EventCreate(cuda.EventDefault); err != nil {
			return err
		}
		if t.end, err = t.drv.EventCreate(cuda.EventDefault); err != nil {
			_ = t.drv.EventDestroy(t.start)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("creating the timing events: %w", err)
	}
	return t, nil
}

// Time records the start event, calls launch (which enqueues work on the
// stream; it runs with the device's context current), records the end
// event, waits for it (at most the timeout) and returns the time between
// the events.
func (t *Timer) Time(launch func() error) (time.Duration, error) {
	var ms float32
	err := t.dev.Do(func() (err error) {
		if err = t.drv.EventRecord(t.start, t.stream); err != nil {
			return err
		}
		if err = launch(); err != nil {
			return err
		}
		if err = t.drv.EventRecord(t.end, t.stream); err != nil {
			return err
		}
		if err = t.wait(); err != nil {
			return err
		}
		ms, err = t.drv.EventElapsedTime(t.start, t.end)
		return err
	})
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// spinFor is how long wait polls the end event without sleeping. The
// ranks' kernels wait for each other, so a rank that oversleeps delays
// every peer's next sample: with sleeps in the loop the ranks fall into a
// pattern where each sample carries another rank's sleep (hundreds of
// microseconds on operations of tens), for gccl and NCCL alike.
const spinFor = 200 * time.Millisecond

// wait polls the end event: yielding for spinFor, then sleeping from a few
// microseconds to 1ms between polls, until the timeout.
func (t *Timer) wait() error {
	p := wait.Poller{Deadline: time.Now().Add(t.timeout), What: "stream", SpinFor: spinFor, MaxSleep: time.Millisecond}
	for {
		done, err := t.drv.EventQuery(t.end)
		if err != nil || done {
			return err
		}
		if p.Pause() != nil {
			return gccl.Errorf(gccl.TimeoutError, "stream", "GPU %d: the operation is not done after %v; "+
				"a rank may have failed (raise -timeout or GCCL_TIMEOUT if it is just long)", t.dev.Ordinal(), t.timeout)
		}
	}
}

// capture records launch's work on the stream into a CUDA graph (relaxed
// capture mode, so that other goroutines' driver calls cannot invalidate
// it) and instantiates it. The capture is always ended, so a failed launch
// leaves the stream usable.
func (t *Timer) capture(launch func() error) (cuda.GraphExec, error) {
	var exec cuda.GraphExec
	err := t.dev.Do(func() error {
		if err := t.drv.StreamBeginCapture(t.stream, cuda.CaptureModeRelaxed); err != nil {
			return fmt.Errorf("beginning the capture: %w", err)
		}
		launchErr := launch()
		g, endErr := t.drv.StreamEndCapture(t.stream)
		if launchErr != nil || endErr != nil {
			if endErr == nil {
				_ = t.drv.GraphDestroy(g)
			}
			return errors.Join(launchErr, endErr)
		}
		var err error
		exec, err = t.drv.GraphInstantiate(g)
		return errors.Join(err, t.drv.GraphDestroy(g))
	})
	if err != nil {
		return 0, fmt.Errorf("capturing a CUDA graph: %w", err)
	}
	return exec, nil
}

// launchGraph returns a launch function that enqueues exec on the stream.
func (t *Timer) launchGraph(exec cuda.GraphExec) func() error {
	return func() error { return t.drv.GraphLaunch(exec, t.stream) }
}

// destroyGraph destroys an instantiated graph.
func (t *Timer) destroyGraph(exec cuda.GraphExec) error {
	return t.dev.Do(func() error { return t.drv.GraphExecDestroy(exec) })
}

// Close destroys the events; it is safe on nil.
func (t *Timer) Close() error {
	if t == nil {
		return nil
	}
	return t.dev.Do(func() error {
		return errors.Join(t.drv.EventDestroy(t.start), t.drv.EventDestroy(t.end))
	})
}

// Stream is the stream the timer records its events on.
func (t *Timer) Stream() cuda.Stream { return t.stream }
