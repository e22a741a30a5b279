package cli

// The zap logger convrep's commands share: human-readable lines on stderr, info and above by default, debug
// with CONVREP_LOG=debug.

import (
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger returns the commands' logger. It never fails: an unknown level in CONVREP_LOG falls back to info and
// says so.
func newLogger() *zap.Logger {
	level := zapcore.InfoLevel
	bad := ""
	if s := os.Getenv("CONVREP_LOG"); s != "" {
		if err := level.UnmarshalText([]byte(s)); err != nil {
			level, bad = zapcore.InfoLevel, s
		}
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05")
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), level)
	log := zap.New(core)
	if bad != "" {
		log.Warn("CONVREP_LOG is not a log level; using info", zap.String("CONVREP_LOG", bad))
	}
	return log
}
