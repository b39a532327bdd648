package accept

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Backoff bounds after a failed Accept, as in net/http.
const (
	MinBackoff = 5 * time.Millisecond
	MaxBackoff = time.Second
)

// Handler runs one accepted connection. It calls done once the connection
// has authenticated (or failed to); done is idempotent and is called for it
// when the handler returns.
type Handler func(c net.Conn, done func())

// Config tunes Serve.
type Config struct {
	MaxPending int                 // handshakes in flight at once; <= 0 means 1
	Go         func(func())        // starts a handler goroutine; nil means go
	Log        func() *slog.Logger // where accept errors go (looked up on each use); nil means slog.Default
	Name       string              // the listener, for logs
	Sleep      func(time.Duration)
}

// Serve accepts connections from ln until it is closed, handing each to
// handle in a goroutine started by cfg.Go. Errors other than a closed
// listener are retried after a backoff; it returns the number of accept
// errors it rode out.
func Serve(ln net.Listener, cfg Config, handle Handler) int {
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 1
	}
	if cfg.Go == nil {
		cfg.Go = func(f func()) { go f() }
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default
	}
	if cfg.Sleep == nil {
		cfg.Sleep = time.Sleep
	}
	slots := make(chan struct{}, cfg.MaxPending)
	var delay time.Duration
	failures := 0
	for {
		slots <- struct{}{}
		c, err := ln.Accept()
		if err != nil {
			<-slots
			if errors.Is(err, net.ErrClosed) {
				return failures
			}
			failures++
			delay = next(delay)
			if delay == MinBackoff {
				cfg.Log().Warn("accept failed; retrying with backoff", "listener", cfg.Name, "err", err)
			}
			cfg.Sleep(delay)
			continue
		}
		if delay != 0 {
			cfg.Log().Info("accepting again", "listener", cfg.Name, "failures", failures)
			delay = 0
		}
		var once sync.Once
		done := func() { once.Do(func() { <-slots }) }
		cfg.Go(func() {
			defer done()
			handle(c, done)
		})
	}
}

// next doubles the backoff from MinBackoff up to MaxBackoff.
func next(d time.Duration) time.Duration {
	if d == 0 {
		return MinBackoff
	}
	return min(2*d, MaxBackoff)
}
