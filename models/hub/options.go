package hub

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
)

// DefaultEndpoint is the hub used when HF_ENDPOINT is unset.
const DefaultEndpoint = "https://huggingface.co"

// DefaultRevision is the branch resolved when no revision is given.
const DefaultRevision = "main"

// Options says where to look for and how to fetch a model. The zero value is
// usable: empty fields take the defaults documented on each field.
type Options struct {
	// Endpoint is the hub's base URL; empty means DefaultEndpoint.
	Endpoint string
	// CacheDir is the HuggingFace hub cache root (the folder holding
	// models--org--name); empty means the one the environment names.
	CacheDir string
	// Revision is a branch, tag or commit hash; empty means DefaultRevision.
	Revision string
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// Offline forbids any network request.
	Offline bool
	// Progress receives download progress bars; nil means silent.
	Progress io.Writer
	// Client performs the requests; nil means a client whose connections
	// are bounded by ConnectTimeout.
	Client *http.Client
	// ConnectTimeout bounds opening a TCP connection when Client is nil;
	// zero or less means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// IdleTimeout bounds the wait for each byte of a download (the
	// response headers included); zero or less means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Logger receives structured logs; nil means none.
	Logger *zap.Logger
	// MaxAttempts bounds the tries per file download when the connection
	// breaks or the server answers 5xx; each retry resumes where the last
	// stopped. Zero or less means 3.
	MaxAttempts int
}

// OptionsFromEnv reads the variables the HuggingFace tools read (HF_ENDPOINT,
// HF_HUB_CACHE, HF_HOME, HF_TOKEN, HF_HUB_OFFLINE) and shows progress on
// stderr.
func OptionsFromEnv() Options {
	return Options{
		Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"),
		CacheDir: DefaultCacheDir(),
		Revision: DefaultRevision,
		Token:    os.Getenv("HF_TOKEN"),
		Offline:  envTrue(os.Getenv("HF_HUB_OFFLINE")),
		Progress: os.Stderr,
	}
}

// DefaultCacheDir is the hub cache root the HuggingFace tools use:
// HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
// else ~/.cache/huggingface/hub.
func DefaultCacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return expandHome(d)
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(expandHome(d), "hub")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(expandHome(d), "huggingface", "hub")
	}
	return filepath.Join(expandHome("~"), ".cache", "huggingface", "hub")
}

// envTrue accepts the spellings huggingface_hub accepts for a true flag.
func envTrue(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// expandHome replaces a leading "~" with the user's home directory, as a
// shell would, so "~/models/bert" works when passed through a config file.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

// withDefaults fills the empty fields.
func (o Options) withDefaults() Options {
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.Revision == "" {
		o.Revision = DefaultRevision
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: newTransport(o.ConnectTimeout)}
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	return o
}

// headTimeout bounds a metadata request, so an endpoint that accepts the
// connection but never answers counts as unreachable rather than hanging.
const headTimeout = 10 * time.Second
