package safetensors

import "errors"

// Sentinel errors, wrapped by every parse and encode error so that callers and
// tests can tell the kinds of damage apart with errors.Is.
var (
	ErrTruncated      = errors.New("file truncated")
	ErrHeaderTooLarge = errors.New("header too large")
	ErrHeader         = errors.New("invalid header")
	ErrDType          = errors.New("unknown dtype")
	ErrShape          = errors.New("invalid shape")
	ErrOffsets        = errors.New("invalid data offsets")
	ErrDuplicate      = errors.New("duplicate name")
	ErrData           = errors.New("invalid tensor data")
)
