package hub

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrNotFound matches (with errors.Is) every *NotFoundError.
var ErrNotFound = errors.New("hub: model not found")

// Candidate is one place Resolve searched for a model and why it did not do.
type Candidate struct {
	Kind string // "local folder", "HF cache"
	Path string
	Why  string
}

// NotFoundError says a model is neither a local folder nor in the cache, and
// could not be downloaded. Its message names every path examined and how to
// provide the weights.
type NotFoundError struct {
	Ref      string
	Looked   []Candidate
	Offline  bool   // downloads were disabled
	Endpoint string // the hub that was (or would have been) asked
	Cause    error  // why the hub was not used, when not offline
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hub: model %q not found", e.Ref)
	switch {
	case e.Offline:
		b.WriteString(" locally, and downloads are off (offline mode: HF_HUB_OFFLINE=1)")
	case e.Cause != nil:
		fmt.Fprintf(&b, " locally, and %v", e.Cause)
	}
	b.WriteString("\nlooked at:")
	for _, l := range e.Looked {
		fmt.Fprintf(&b, "\n  %-13s %s: %s", l.Kind, l.Path, l.Why)
	}
	b.WriteString("\nto provide the weights, either:")
	if validRepoID(e.Ref) {
		fmt.Fprintf(&b, "\n  - download them once with the HuggingFace tools while online"+
			" (`huggingface-cli download %s`, same HF_HOME), which fills the cache above;", e.Ref)
		fmt.Fprintf(&b, "\n  - `git lfs install && git clone %s/%s <folder>`, then pass <folder> as the model;",
			e.Endpoint, e.Ref)
	} else {
		b.WriteString("\n  - pass a folder holding config.json and model.safetensors (or pytorch_model.bin);")
		b.WriteString("\n  - or `git clone` the model repo into a folder and pass that folder;")
	}
	b.WriteString("\n  - set HF_HOME (or HF_HUB_CACHE) to a HuggingFace cache that already holds the model.")
	return b.String()
}

func (e *NotFoundError) Unwrap() error { return e.Cause }

func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ChecksumError says a downloaded file's hash differs from its ETag; the
// bad blob has been deleted.
type ChecksumError struct {
	File     string
	Algo     string // "sha256" (LFS files) or "git blob sha1"
	Expected string
	Got      string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("hub: download %s: %s mismatch: expected %s, got %s (corrupted download deleted)",
		e.File, e.Algo, e.Expected, e.Got)
}

// StatusError is an unexpected HTTP status from the hub.
type StatusError struct {
	Method string
	URL    string
	Code   int
	// HubCode is the hub's X-Error-Code (e.g. "RepoNotFound", "EntryNotFound").
	HubCode string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
	if e.HubCode != "" {
		msg += " (" + e.HubCode + ")"
	}
	if e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden {
		msg += "; the repo may not exist, or be private or gated: set HF_TOKEN"
	}
	return msg
}

// transientError marks a failure worth retrying: a broken connection or a
// server-side error.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

func isTransient(err error) bool {
	var t *transientError
	if errors.As(err, &t) {
		return true
	}
	var s *StatusError
	return errors.As(err, &s) && (s.Code >= 500 || s.Code == http.StatusTooManyRequests)
}

func isStatus(err error, code int) bool {
	var s *StatusError
	return errors.As(err, &s) && s.Code == code
}
