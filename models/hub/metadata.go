package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// fileMeta is what a HEAD on a hub file tells: the commit the revision
// resolved to, the blob's ETag (sha256 for LFS files) and its size.
type fileMeta struct {
	file   string
	url    string // resolve URL to GET, after any repo-rename redirect
	commit string
	etag   string
	size   int64 // -1 when the server did not say
}

// hubClient talks to one hub endpoint.
type hubClient struct {
	opt Options
	// head does not follow redirects: the hub answers an LFS file with a
	// redirect to a CDN whose own headers lack X-Repo-Commit, so the
	// metadata must be read from the redirect itself.
	head *http.Client
}

func newHubClient(opt Options) *hubClient {
	head := *opt.Client
	head.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &hubClient{opt: opt, head: &head}
}

// fileURL is {endpoint}/{repo}/resolve/{revision}/{file}, with the revision
// escaped as one segment (so "refs/pr/1" stays one).
func (h *hubClient) fileURL(repo, rev, file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return h.opt.Endpoint + "/" + repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(parts, "/")
}

func (h *hubClient) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	if h.opt.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.opt.Token)
	}
	// Sizes and ranges must count the file's bytes, not a compressed stream.
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", "convrep-hub/1")
	return req, nil
}

// maxRenameRedirects bounds the relative redirects followed on HEAD; the hub
// sends them when a repo was renamed.
const maxRenameRedirects = 5

// stat HEADs one file of repo at rev.
func (h *hubClient) stat(ctx context.Context, repo, rev, file string) (fileMeta, error) {
	m, err := h.statOnce(ctx, repo, rev, file)
	if err != nil {
		return m, fmt.Errorf("hub: stat %s of %s at %s: %w", file, repo, rev, err)
	}
	return m, nil
}

func (h *hubClient) statOnce(ctx context.Context, repo, rev, file string) (fileMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, headTimeout)
	defer cancel()
	u := h.fileURL(repo, rev, file)
	for range maxRenameRedirects + 1 {
		req, err := h.newRequest(ctx, http.MethodHead, u)
		if err != nil {
			return fileMeta{}, err
		}
		resp, err := h.head.Do(req)
		if err != nil {
			return fileMeta{}, h.headError(ctx, u, err)
		}
		resp.Body.Close()
		if isRedirect(resp.StatusCode) {
			loc, err := resp.Location()
			if err != nil {
				return fileMeta{}, fmt.Errorf("HEAD %s: redirect: %w", u, err)
			}
			if loc.Host == req.URL.Host {
				u = loc.String()
				continue
			}
			// A redirect to another host is the LFS one: its headers are the metadata.
		} else if resp.StatusCode != http.StatusOK {
			return fileMeta{}, &StatusError{Method: http.MethodHead, URL: u, Code: resp.StatusCode,
				HubCode: resp.Header.Get("X-Error-Code")}
		}
		return parseMeta(file, u, resp.Header)
	}
	return fileMeta{}, fmt.Errorf("HEAD %s: more than %d redirects", h.fileURL(repo, rev, file), maxRenameRedirects)
}

// headError names the timeout that cut a HEAD short; other errors are
// *url.Error values, which already name the method and the URL.
func (h *hubClient) headError(ctx context.Context, u string, err error) error {
	if errors.Is(err, errConnectTimeout) {
		return &TimeoutError{Method: http.MethodHead, URL: u, Phase: "connect", After: h.opt.ConnectTimeout}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Method: http.MethodHead, URL: u, Phase: "idle", After: headTimeout}
	}
	return err
}

func isRedirect(code int) bool {
	return code == http.StatusMovedPermanently || code == http.StatusFound ||
		code == http.StatusSeeOther || code == http.StatusTemporaryRedirect ||
		code == http.StatusPermanentRedirect
}

// parseMeta reads the hub's headers. X-Linked-* describe the LFS object when
// the plain ones describe the pointer or the redirect.
func parseMeta(file, u string, hd http.Header) (fileMeta, error) {
	m := fileMeta{file: file, url: u, size: -1}
	m.commit = hd.Get("X-Repo-Commit")
	if !commitPattern.MatchString(m.commit) {
		return m, fmt.Errorf("HEAD %s: X-Repo-Commit %q is not a commit hash; is this a HuggingFace hub endpoint?", u, m.commit)
	}
	m.etag = normalizeETag(hd.Get("X-Linked-Etag"))
	if m.etag == "" {
		m.etag = normalizeETag(hd.Get("ETag"))
	}
	if !etagPattern.MatchString(m.etag) {
		return m, fmt.Errorf("HEAD %s: missing or unusable ETag %q", u, m.etag)
	}
	size := hd.Get("X-Linked-Size")
	if size == "" {
		size = hd.Get("Content-Length")
	}
	if size != "" {
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil || n < 0 {
			return m, fmt.Errorf("HEAD %s: bad size %q", u, size)
		}
		m.size = n
	}
	return m, nil
}
