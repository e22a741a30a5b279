package hub

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.uber.org/zap"
)

// Resolve returns a local folder holding the HuggingFace files of ref: ref
// itself when it is a folder with config.json, else the cached snapshot of
// the hub repo ref names at opt.Revision, else that snapshot after
// downloading it. ref is "org/name", a short name such as
// "bert-base-uncased" (used as the repo id as is) or a path.
//
// When the model is nowhere and cannot be downloaded the error is a
// *NotFoundError (errors.Is(err, ErrNotFound)) naming each path examined.
// Cancelling ctx stops a download; the partial file is kept and the next
// call resumes it.
func Resolve(ctx context.Context, ref string, opt Options) (string, error) {
	opt = opt.withDefaults()
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", errors.New("hub: empty model reference")
	}
	if err := checkRevision(opt.Revision); err != nil {
		return "", err
	}
	log := opt.Logger.With(zap.String("model", ref))
	nf := &NotFoundError{Ref: ref, Endpoint: opt.Endpoint}

	local := expandHome(ref)
	switch {
	case isFile(filepath.Join(local, configFile)):
		log.Debug("using local folder", zap.String("dir", local))
		return local, nil
	case isDir(local):
		nf.Looked = append(nf.Looked, Candidate{Kind: "local folder", Path: absPath(local), Why: "has no " + configFile})
	default:
		nf.Looked = append(nf.Looked, Candidate{Kind: "local folder", Path: absPath(local), Why: "does not exist"})
	}
	if !validRepoID(ref) {
		nf.Cause = fmt.Errorf("%q is not a hub repo id (name or org/name)", ref)
		return "", nf
	}

	c := newCacheRepo(opt.CacheDir, ref)
	dir, looked := c.lookup(opt.Revision)
	if dir != "" {
		log.Debug("using cached snapshot", zap.String("dir", dir))
		return dir, nil
	}
	nf.Looked = append(nf.Looked, looked)
	if opt.Offline {
		nf.Offline = true
		return "", nf
	}

	dir, err := newHubClient(opt).download(ctx, c, ref, opt.Revision)
	var unavailable *errUnavailable
	if errors.As(err, &unavailable) {
		nf.Cause = fmt.Errorf("the hub at %s could not be used: %w", opt.Endpoint, unavailable.err)
		return "", nf
	}
	if err != nil {
		return "", err
	}
	log.Info("model downloaded", zap.String("dir", dir))
	return dir, nil
}

// absPath makes error messages show where a relative path was looked for.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
