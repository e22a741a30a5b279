package hub

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	content := []byte("{\"hidden_size\": 32}\n")
	tampered := bytes.Clone(content)
	tampered[3] ^= 0x20 // same size, one bit off
	tests := []struct {
		name     string
		etag     string
		content  []byte
		wantAlgo string // of the *ChecksumError; "" when verify passes
		wantErr  string // another error
	}{
		{name: "sha256 good", etag: sha256Hex(content), content: content},
		{name: "sha256 bad", etag: sha256Hex(content), content: tampered, wantAlgo: "sha256"},
		{name: "git sha1 good", etag: gitBlobSHA1(content), content: content},
		{name: "git sha1 bad, same size", etag: gitBlobSHA1(content), content: tampered, wantAlgo: "git blob sha1"},
		{name: "plain sha1 is not the git one", etag: fmt.Sprintf("%x", sha1Sum(content)), content: content,
			wantAlgo: "git blob sha1"},
		{name: "unverifiable etag", etag: "v1-1234", content: content, wantErr: "cannot be checked"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "blob")
			if err := os.WriteFile(p, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			err := verify(fileMeta{file: "config.json", etag: tc.etag}, p)
			var ce *ChecksumError
			switch {
			case tc.wantAlgo != "":
				if !errors.As(err, &ce) || ce.Algo != tc.wantAlgo || ce.File != "config.json" {
					t.Errorf("verify = %v, want a %s *ChecksumError for config.json", err, tc.wantAlgo)
				}
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.etag) {
					t.Errorf("verify = %v, want an error naming %s and %q", err, tc.etag, tc.wantErr)
				}
			case err != nil:
				t.Errorf("verify: %v", err)
			}
		})
	}
}

// Blobs are trusted on their hash, never their size: a same-size corrupted
// download of a git file is refused, and a same-size corrupted cached blob
// (as a late truncate and rewrite would leave) is fetched again.
func TestResolveChecksEveryBlobByHash(t *testing.T) {
	bert := readFixture(t, "tiny-bert", bertNames...)
	want := without(bert, "pytorch_model.bin")
	vocab := bert["vocab.txt"]
	badVocab := bytes.Clone(vocab)
	badVocab[len(badVocab)/2] ^= 0x01
	weights := bert["model.safetensors"]
	badWeights := bytes.Clone(weights)
	clear(badWeights[len(badWeights)/2:])

	tests := []struct {
		name string
		// cached blobs written before Resolve: etag -> content
		cached   map[string][]byte
		gitFault cdnFault
		wantErr  string // "" when Resolve must succeed with the good files
	}{
		{name: "git file downloaded corrupt", wantErr: "git blob sha1 mismatch",
			gitFault: func(w http.ResponseWriter, r *http.Request, data []byte, _ int) bool {
				if !bytes.Equal(data, vocab) {
					return false
				}
				w.Write(badVocab)
				return true
			}},
		{name: "cached git blob corrupt", cached: map[string][]byte{gitBlobSHA1(vocab): badVocab}},
		{name: "cached LFS blob half zeroed", cached: map[string][]byte{sha256Hex(weights): badWeights}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hub := newFakeHub(t)
			hub.addRepo("convrep/tiny-bert", commitA, bert)
			hub.gitFault = tc.gitFault
			cache := t.TempDir()
			blobs := filepath.Join(cache, repoFolderName("convrep/tiny-bert"), "blobs")
			if err := os.MkdirAll(blobs, 0o755); err != nil {
				t.Fatal(err)
			}
			for etag, b := range tc.cached {
				if err := os.WriteFile(filepath.Join(blobs, etag), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Resolve(context.Background(), "convrep/tiny-bert", Options{Endpoint: hub.main.URL, CacheDir: cache})
			if tc.wantErr != "" {
				var ce *ChecksumError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.wantErr) || ce.File != "vocab.txt" {
					t.Fatalf("Resolve: %v, want a *ChecksumError for vocab.txt with %q", err, tc.wantErr)
				}
				if names := dirNames(t, blobs); slices.Contains(names, gitBlobSHA1(vocab)) ||
					slices.Contains(names, gitBlobSHA1(vocab)+".incomplete") {
					t.Errorf("bad vocab.txt kept in the cache: %v", names)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			checkSnapshot(t, cache, "convrep/tiny-bert", commitA, want)
		})
	}
}

// A symlink planted at the partial download's path must not redirect the
// download's writes to its target.
func TestResolveRefusesPlantedSymlink(t *testing.T) {
	bert := readFixture(t, "tiny-bert", bertNames...)
	hub := newFakeHub(t)
	hub.addRepo("convrep/tiny-bert", commitA, bert)
	cache := t.TempDir()
	blobs := filepath.Join(cache, repoFolderName("convrep/tiny-bert"), "blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	const keep = "not to be overwritten"
	if err := os.WriteFile(victim, []byte(keep), 0o644); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(blobs, sha256Hex(bert["model.safetensors"])+".incomplete")
	if err := os.Symlink(victim, partial); err != nil {
		t.Fatal(err)
	}

	_, err := Resolve(context.Background(), "convrep/tiny-bert", Options{Endpoint: hub.main.URL, CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), partial) || !strings.Contains(err.Error(), "refusing to write through it") {
		t.Fatalf("Resolve: %v, want a refusal naming %s", err, partial)
	}
	if b, _ := os.ReadFile(victim); string(b) != keep {
		t.Errorf("symlink target was written: %q", b)
	}
	if got := readRef(t, cache, "convrep/tiny-bert", "main"); got != "" {
		t.Errorf("refs/main written after a refused download: %q", got)
	}
}

func sha1Sum(b []byte) [20]byte { return sha1.Sum(b) }
