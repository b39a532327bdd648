package cuda

import "sync/atomic"

// RetainByGraph runs fn once graph g and every executable graph
// instantiated from it are destroyed: a user object whose destructor runs
// fn is moved into g (cuUserObjectCreate + cuGraphRetainUserObject). fn runs
// on a driver thread, so it must not call the driver. On error fn never
// runs.
func RetainByGraph(d Driver, g Graph, fn func()) error {
	var armed atomic.Bool
	armed.Store(true)
	o, err := d.UserObjectCreate(func() {
		if armed.Load() {
			fn()
		}
	})
	if err != nil {
		return err
	}
	if err := d.GraphRetainUserObject(g, o, 1, true); err != nil {
		armed.Store(false)
		_ = d.UserObjectRelease(o, 1)
		return err
	}
	return nil
}
