package hub

import (
	"net/http"
	"testing"
)

// FuzzParseMeta feeds the hub's HEAD headers arbitrary values: parseMeta must not panic, and what it accepts
// has a commit, an ETag and a size it can trust.
//
//	go test -run XXX -fuzz FuzzParseMeta -fuzztime 60s ./models/hub
func FuzzParseMeta(f *testing.F) {
	f.Add("0123456789abcdef0123456789abcdef01234567", `"d0c5d8ac2c4f8a6a3c1e5f0b0b9d4f2a3e6c7b8d9e0f1a2b3c4d5e6f7a8b9c0d"`, "", "1234")
	f.Add("0123456789abcdef0123456789abcdef01234567", "", `W/"abc"`, "-1")
	f.Add("nothex", "", "", "")
	f.Fuzz(func(t *testing.T, commit, linkedETag, etag, size string) {
		h := http.Header{}
		h.Set("X-Repo-Commit", commit)
		h.Set("X-Linked-Etag", linkedETag)
		h.Set("ETag", etag)
		h.Set("X-Linked-Size", size)
		h.Set("Content-Length", size)
		m, err := parseMeta("config.json", "http://127.0.0.1/x", h)
		if err != nil {
			return
		}
		if m.commit == "" || m.etag == "" || m.size < -1 {
			t.Errorf("accepted %+v", m)
		}
	})
}
