package env

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
)

// Version is gccl's version as a string, printed when GCCL_DEBUG=VERSION.
const Version = "0.1.0"

var (
	logMu       sync.Mutex
	loggers               = map[string]*slog.Logger{}
	logOut      io.Writer = os.Stderr
	versionOnce sync.Once
)

// Logger returns the logger of a subsystem ("INIT", "BOOTSTRAP", "COLL", ...),
// configured from GCCL_DEBUG and GCCL_DEBUG_SUBSYS. A subsystem that is not
// enabled gets a logger that discards everything.
func Logger(subsys string) *slog.Logger { return loggerFor(Get(), subsys) }

// loggerFor is Logger for settings s; it never calls Get, so Get itself can
// log through it.
func loggerFor(s *Settings, subsys string) *slog.Logger {
	logMu.Lock()
	defer logMu.Unlock()
	if l, ok := loggers[subsys]; ok {
		return l
	}
	level := s.Debug
	if !s.SubsysEnabled(subsys) {
		level = LevelNone
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: traceName}
	l := slog.New(&levelHandler{slog.NewTextHandler(logOut, opts), level}).With("subsys", subsys)
	loggers[subsys] = l
	if s.DebugVersion || s.Debug <= slog.LevelInfo {
		versionOnce.Do(func() { logVersion(subsys) })
	}
	return l
}

// logVersion prints the version line once, at INFO, also when the level
// is WARN (GCCL_DEBUG=VERSION asks for exactly that line and the warnings).
func logVersion(subsys string) {
	slog.New(slog.NewTextHandler(logOut, nil)).Info("gccl version "+Version, "subsys", subsys)
}

// SetOutput redirects all loggers (made after the call) to w; tests use it to
// capture log lines. It returns the previous writer.
func SetOutput(w io.Writer) io.Writer {
	logMu.Lock()
	defer logMu.Unlock()
	old := logOut
	logOut = w
	loggers = map[string]*slog.Logger{}
	return old
}

func resetLoggers() {
	logMu.Lock()
	loggers = map[string]*slog.Logger{}
	logMu.Unlock()
}

// traceName prints LevelTrace as TRACE instead of DEBUG-4.
func traceName(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.LevelKey {
		if l, ok := a.Value.Any().(slog.Level); ok && l <= LevelTrace {
			a.Value = slog.StringValue("TRACE")
		}
	}
	return a
}

// levelHandler drops everything when the level is LevelNone, so that even
// errors stay quiet when the user asked for silence.
type levelHandler struct {
	slog.Handler
	level slog.Level
}

func (h *levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.level < LevelNone && h.Handler.Enabled(ctx, l)
}

func (h *levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &levelHandler{h.Handler.WithAttrs(as), h.level}
}

func (h *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{h.Handler.WithGroup(name), h.level}
}
