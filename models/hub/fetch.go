package hub

import (
	"context"
	"fmt"
	"net/http"

	"go.uber.org/zap"
)

// errUnavailable wraps why the hub could not be asked about a model at all,
// so Resolve reports it together with the paths it looked at.
type errUnavailable struct{ err error }

func (e *errUnavailable) Error() string { return e.err.Error() }
func (e *errUnavailable) Unwrap() error { return e.err }

// download fetches config.json, the weights and the tokenizer files of repo
// at rev into the cache and returns the snapshot folder. Every file is taken
// at the commit config.json resolved to, so a push during the download cannot
// mix two versions. refs/<rev> is written last: it only ever points at a
// snapshot that is complete.
func (h *hubClient) download(ctx context.Context, c cacheRepo, repo, rev string) (string, error) {
	cfg, err := h.stat(ctx, repo, rev, configFile)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("hub: resolve %s: %w", repo, ctx.Err())
		}
		return "", &errUnavailable{err}
	}
	commit := cfg.commit
	// Ask again at the commit so config.json too is fetched from it.
	if cfg, err = h.stat(ctx, repo, commit, configFile); err != nil {
		return "", err
	}
	metas := []fileMeta{cfg}

	weights, err := h.statFirst(ctx, repo, commit, weightFiles)
	if err != nil {
		return "", err
	}
	metas = append(metas, weights)

	for _, f := range tokenizerFiles {
		m, err := h.stat(ctx, repo, commit, f)
		if isStatus(err, http.StatusNotFound) {
			continue // optional; each model has only some of them
		}
		if err != nil {
			return "", err
		}
		metas = append(metas, m)
	}

	h.opt.Logger.Info("fetching model", zap.String("repo", repo), zap.String("revision", rev),
		zap.String("commit", commit), zap.Int("files", len(metas)))
	for _, m := range metas {
		if err := h.fetchBlob(ctx, c, m); err != nil {
			return "", err
		}
		if err := c.link(commit, m.file, m.etag); err != nil {
			return "", err
		}
	}
	if rev != commit {
		if err := c.writeRef(rev, commit); err != nil {
			return "", err
		}
	}
	return c.snapshotDir(commit), nil
}

// statFirst HEADs the candidates in order and returns the first the repo
// has: model.safetensors, else pytorch_model.bin.
func (h *hubClient) statFirst(ctx context.Context, repo, commit string, names []string) (fileMeta, error) {
	for _, f := range names {
		m, err := h.stat(ctx, repo, commit, f)
		if isStatus(err, http.StatusNotFound) {
			continue
		}
		return m, err
	}
	return fileMeta{}, fmt.Errorf("hub: %s at %s has none of %v (sharded checkpoints are not supported)",
		repo, commit, names)
}
