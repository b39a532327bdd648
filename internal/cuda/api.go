package cuda

import "sync"

var (
	loadOnce sync.Once
	loaded   Driver
	loadErr  error
)

// Load opens libcuda.so.1 (once per process), resolves every entry point
// at its pinned ABI version and calls cuInit. With no usable driver it
// returns an error wrapping ErrNoDriver.
func Load() (Driver, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

// Available reports whether Load succeeds.
func Available() bool {
	_, err := Load()
	return err == nil
}
