package engine

import "context"

// backendCloser is a backend holding resources that Close and Abort free.
type backendCloser interface {
	close(abort bool) error
}

// useGPU switches the engine to the GPU backend when its device is a GPU
// (called by New when Config.Backend is nil; collective over the ranks).
func (e *Engine) useGPU(ctx context.Context) error {
	dev, ok := gpuDevice(e.dev)
	if !ok {
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
