package hub

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

const (
	commitA = "0123456789abcdef0123456789abcdef01234567"
	commitB = "fedcba9876543210fedcba9876543210fedcba98"
)

var bertNames = []string{"config.json", "model.safetensors", "pytorch_model.bin",
	"special_tokens_map.json", "tokenizer_config.json", "vocab.txt"}

// robertaNames leave out model.safetensors and tokenizer.json, so the
// download must fall back to pytorch_model.bin and skip absent tokenizer files.
var robertaNames = []string{"config.json", "pytorch_model.bin", "vocab.json", "merges.txt"}

func without(files map[string][]byte, drop ...string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range files {
		if !slices.Contains(drop, k) {
			out[k] = v
		}
	}
	return out
}

func etagOf(name string, data []byte) string {
	if isLFS(name) {
		return sha256Hex(data)
	}
	return gitBlobSHA1(data)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// checkSnapshot asserts the HuggingFace cache layout: snapshots/<commit>
// holds exactly want, each a relative symlink to ../../blobs/<etag> whose
// bytes equal the fixture, and blobs holds those etags and nothing partial.
func checkSnapshot(t *testing.T, cacheRoot, repo, commit string, want map[string][]byte) {
	t.Helper()
	repoDir := filepath.Join(cacheRoot, repoFolderName(repo))
	snap := filepath.Join(repoDir, "snapshots", commit)
	if got, w := dirNames(t, snap), slices.Sorted(maps.Keys(want)); !slices.Equal(got, w) {
		t.Fatalf("snapshot files = %v, want %v", got, w)
	}
	var etags []string
	for name, data := range want {
		p := filepath.Join(snap, name)
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatalf("%s is not a symlink: %v", p, err)
		}
		etag := etagOf(name, data)
		etags = append(etags, etag)
		if target != "../../blobs/"+etag {
			t.Errorf("%s -> %s, want ../../blobs/%s", name, target, etag)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: %d bytes differ from the fixture's %d", name, len(got), len(data))
		}
	}
	slices.Sort(etags)
	if got := dirNames(t, filepath.Join(repoDir, "blobs")); !slices.Equal(got, etags) {
		t.Errorf("blobs = %v, want %v", got, etags)
	}
}

func readRef(t *testing.T, cacheRoot, repo, rev string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cacheRoot, repoFolderName(repo), "refs", rev))
	if err != nil {
		return ""
	}
	return string(b)
}

// clearHFEnv keeps the developer's own HuggingFace settings out of a test.
func clearHFEnv(t *testing.T) {
	for _, k := range []string{"HF_HOME", "HF_HUB_CACHE", "HF_ENDPOINT", "HF_TOKEN", "HF_HUB_OFFLINE", "XDG_CACHE_HOME"} {
		t.Setenv(k, "")
	}
}

func TestResolveDownloadsIntoHFCache(t *testing.T) {
	bert := readFixture(t, "tiny-bert", bertNames...)
	roberta := readFixture(t, "tiny-roberta", robertaNames...)
	hub := newFakeHub(t)
	hub.addRepo("convrep/tiny-bert", commitA, bert)
	hub.addRepo("tiny-roberta", commitB, roberta)
	hub.renames["convrep/old-bert"] = "convrep/tiny-bert"

	tests := []struct {
		name     string
		ref      string
		revision string
		token    string
		commit   string
		want     map[string][]byte
		wantRef  bool // refs/<revision> written (not when the revision is a commit)
	}{
		{name: "org/name prefers safetensors", ref: "convrep/tiny-bert", commit: commitA,
			want: without(bert, "pytorch_model.bin"), wantRef: true},
		{name: "short name falls back to pytorch_model.bin", ref: "tiny-roberta", commit: commitB,
			want: roberta, wantRef: true},
		{name: "revision given as commit", ref: "convrep/tiny-bert", revision: commitA, commit: commitA,
			want: without(bert, "pytorch_model.bin")},
		{name: "renamed repo followed", ref: "convrep/old-bert", commit: commitA,
			want: without(bert, "pytorch_model.bin"), wantRef: true},
		{name: "token sent", ref: "tiny-roberta", token: "hf_secret", commit: commitB,
			want: roberta, wantRef: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearHFEnv(t)
			home := t.TempDir()
			t.Setenv("HF_HOME", home)
			t.Setenv("HF_TOKEN", tc.token)
			opt := OptionsFromEnv()
			opt.Endpoint = hub.main.URL
			if tc.revision != "" {
				opt.Revision = tc.revision
			}
			var progress bytes.Buffer
			opt.Progress = &progress
			hub.resetLog()

			dir, err := Resolve(context.Background(), tc.ref, opt)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			cacheRoot := filepath.Join(home, "hub")
			wantDir := filepath.Join(cacheRoot, repoFolderName(tc.ref), "snapshots", tc.commit)
			if dir != wantDir {
				t.Fatalf("dir = %s, want %s", dir, wantDir)
			}
			checkSnapshot(t, cacheRoot, tc.ref, tc.commit, tc.want)
			rev := opt.Revision
			if got := readRef(t, cacheRoot, tc.ref, rev); tc.wantRef && got != tc.commit {
				t.Errorf("refs/%s = %q, want %q", rev, got, tc.commit)
			} else if !tc.wantRef && got != "" {
				t.Errorf("refs/%s written for a commit revision: %q", rev, got)
			}
			weight := "model.safetensors"
			if _, ok := tc.want[weight]; !ok {
				weight = "pytorch_model.bin"
			}
			// The finished bar shows bytes done/total and the rate, e.g. "(4.1/4.1 MB, 500 MB/s)"; the rate's unit
			// follows the speed, and a local server can reach GB/s.
			finished := regexp.MustCompile(regexp.QuoteMeta(weight) + ` 100% \|[^|]*\| \([0-9.]+/[0-9.]+ MB, [0-9.]+ [kMG]?B/s\)`)
			if p := progress.String(); !finished.MatchString(p) {
				t.Errorf("progress output lacks %s's finished bar with size and rate: %q", weight, p)
			}
			if tc.token != "" {
				if len(hub.authHeaders()) == 0 {
					t.Error("no request reached the hub")
				}
				for _, a := range hub.authHeaders() {
					if a != "Bearer "+tc.token {
						t.Errorf("hub request with Authorization %q, want Bearer %s", a, tc.token)
					}
				}
			}

			hub.resetLog()
			again, err := Resolve(context.Background(), tc.ref, opt)
			if err != nil {
				t.Fatalf("second Resolve: %v", err)
			}
			if again != dir {
				t.Errorf("second Resolve = %s, want %s", again, dir)
			}
			if reqs := hub.requests(); len(reqs) != 0 {
				t.Errorf("second Resolve made requests: %v", reqs)
			}
		})
	}
}
