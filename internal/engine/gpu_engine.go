package engine

import "context"

// backendCloser is a backend holding resources that Close and Abort free.
type backendCloser interface {
	close(abort bool) error
}

// useGPU switches the engine to a GPU backend when its device is a GPU
// (called by New when Config.Backend is nil; collective over the ranks):
// kernels over peer-mapped memory, or host staging when peers cannot map
// each other (GCCL_P2P_DISABLE, other hosts, more than kernels.MaxRanks).
func (e *Engine) useGPU(ctx context.Context) error {
	dev, ok := gpuDevice(e.dev)
	if !ok {
		return nil
	}
	if e.useStaged() {
		e.backend = &gpuStaged{dev: dev, drv: dev.Driver()}
		return nil
	}
	g, err := newGPUBackend(ctx, e, dev)
	if err != nil {
		return err
	}
	e.backend = g
	return nil
}

// closeBackend frees the backend's resources, if it holds any.
func (e *Engine) closeBackend(abort bool) error {
	if c, ok := e.backend.(backendCloser); ok {
		return c.close(abort)
	}
	return nil
}
