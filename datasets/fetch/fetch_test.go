package fetch

import (
	"context"
	"strings"
	"testing"
)

// Select keeps the files under each chosen folder, in the order chosen, and names a choice with no files.
func TestSelect(t *testing.T) {
	all, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	count := func(prefix string) int {
		n := 0
		for _, e := range all {
			if strings.HasPrefix(e.Path, prefix) {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		corpora, eval []string
		vocab         bool
		want          int    // entries
		first         string // the first entry's folder
		err           string
	}{
		{corpora: []string{"woz2"}, want: count("pretrain/woz2/"), first: "pretrain/woz2/"},
		{corpora: []string{"camrest676", "woz2"}, eval: []string{"clinc150"}, vocab: true,
			want: count("pretrain/camrest676/") + count("pretrain/woz2/") + count("eval/clinc150/") + count("vocab/"), first: "pretrain/camrest676/"},
		{eval: []string{"snips"}, want: count("eval/snips/"), first: "eval/snips/"},
		{want: 0},
		{corpora: []string{"nope"}, err: `corpora: unknown corpus "nope"`},
		{eval: []string{"nope"}, err: "the manifest has no files under eval/nope/"},
	} {
		got, err := Select(all, tc.corpora, tc.eval, tc.vocab)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %v: error %v, want %q", tc.corpora, tc.eval, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != tc.want || (tc.want > 0 && !strings.HasPrefix(got[0].Path, tc.first)) {
			t.Errorf("%v %v %v: %d entries (%v), want %d starting under %s", tc.corpora, tc.eval, tc.vocab, len(got), err, tc.want, tc.first)
		}
		if tc.first != "" && count(tc.first) == 0 {
			t.Errorf("the manifest has nothing under %s: the case tests nothing", tc.first)
		}
	}
}

// Fetch wants a base URL: an empty one is an error, not a guess.
func TestFetchNeedsBaseURL(t *testing.T) {
	all, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(context.Background(), t.TempDir(), all[:1], Options{}); err == nil || !strings.Contains(err.Error(), "base URL") {
		t.Errorf("Fetch with no base URL: %v", err)
	}
}
