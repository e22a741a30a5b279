package fetch

import (
	"bytes"
	"strings"
	"testing"

	"convrep/internal/shared"
)

// The manifest in the repository is the one ../shared/data gives today: every file, size and hash.
func TestManifestIsCurrent(t *testing.T) {
	es, skipped, err := Build(shared.MustPath(t, "data"))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Errorf("files without a source: %v", skipped)
	}
	var b bytes.Buffer
	if err := Write(&b, es); err != nil {
		t.Fatal(err)
	}
	if b.String() != manifestTSV {
		t.Error("datasets/fetch/manifest.tsv is stale: go run ./cmd/data manifest > datasets/fetch/manifest.tsv")
	}
	got, err := Parse(manifestTSV)
	if err != nil || len(got) != len(es) {
		t.Fatalf("parse: %d entries, %v", len(got), err)
	}
}

func TestParseManifestRejects(t *testing.T) {
	h := Header + "\n"
	sum := strings.Repeat("a", 64)
	for _, tc := range []struct{ src, want string }{
		{"path\tsize\n", "line 1: header"},
		{h + "a\t1\t" + sum + "\tr/x\tc\n", "line 2: 5 fields"},
		{h + "a\t-1\t" + sum + "\tr/x\tc\tu\n", "line 2: size"},
		{h + "a\t1\tnothex\tr/x\tc\tu\n", "line 2: sha256"},
		{h + "../a\t1\t" + sum + "\tr/x\tc\tu\n", "stay inside"},
		{h + "a\t1\t" + sum + "\tr/x\tc\t/etc/passwd\n", "stay inside"},
	} {
		if _, err := Parse(tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
}
