package objectives

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"convrep/datasets"
)

// The streamed split holds out about share·n dialogues (within five standard deviations of the binomial
// count), decides each by its key and the seed alone, and draws another split for another seed.
func TestHeldOutStreamedShare(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		share float64
		seed  int64
	}{{0.1, 1}, {0.01, 42}, {0.5, 7}, {0.002, -3}} {
		t.Run(fmt.Sprintf("share %g seed %d", tc.share, tc.seed), func(t *testing.T) {
			var held, again, other []string
			for i := range n {
				key := fmt.Sprintf("support/T-%d", i)
				if HeldOutStreamed(key, tc.share, tc.seed) {
					held = append(held, key)
				}
				if HeldOutStreamed(key, tc.share, tc.seed) {
					again = append(again, key)
				}
				if HeldOutStreamed(key, tc.share, tc.seed+1) {
					other = append(other, key)
				}
			}
			mean, sd := tc.share*n, math.Sqrt(tc.share*(1-tc.share)*n)
			if got := float64(len(held)); math.Abs(got-mean) > 5*sd {
				t.Errorf("held out %d of %d, want %.0f ± %.0f", len(held), n, mean, 5*sd)
			}
			if !slices.Equal(held, again) {
				t.Error("the same key and seed were decided twice differently")
			}
			if slices.Equal(held, other) {
				t.Error("seeds s and s+1 held out the same dialogues")
			}
		})
	}
}

// writeDialogueCSV writes n dialogues of four turns, one row a turn, and returns the file.
func writeDialogueCSV(t *testing.T, n int, extra string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("dialogue_id,turn,speaker,text\n")
	for d := range n {
		for u := range 4 {
			fmt.Fprintf(&b, "d%04d,%d,%s,turn %d of dialogue number %d here\n", d, u+1, []string{"user", "agent"}[u%2], u, d)
		}
	}
	b.WriteString(extra)
	path := filepath.Join(t.TempDir(), "chats.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Own files alone stream: through a Holdout, the two sides are disjoint and make up the whole, the
// validation side is what HeldOutStreamed holds out, Seen hears its keys sorted, and ReadDialogues gives what
// EachDialogue hands out.
func TestEachDialogueStreamsOwnFiles(t *testing.T) {
	path := writeDialogueCSV(t, 500, "")
	env := DataEnv{Read: datasets.ReadOptions{Files: &datasets.FileSet{Paths: []string{path}}}}
	if !env.Streams() || (DataEnv{Corpora: []string{"woz2"}, Read: env.Read}).Streams() {
		t.Fatal("own files alone stream; with corpora they do not")
	}
	all, err := env.ReadDialogues()
	if err != nil || len(all) != 500 {
		t.Fatalf("%d dialogues, %v", len(all), err)
	}
	var seen []string
	train, valid := env, env
	train.Holdout = &Holdout{Share: 0.2, Seed: 3}
	valid.Holdout = &Holdout{Share: 0.2, Seed: 3, Valid: true, Seen: func(k []string) { seen = k }}
	var tr, va []string
	if err := train.EachDialogue(func(d datasets.Dialogue) error { tr = append(tr, DialogueKey(d)); return nil }); err != nil {
		t.Fatal(err)
	}
	vd, err := valid.ReadDialogues()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range vd {
		key := DialogueKey(d)
		if slices.Contains(tr, key) || !HeldOutStreamed(key, 0.2, 3) {
			t.Fatalf("dialogue %s is on the wrong side", key)
		}
		va = append(va, key)
	}
	if len(tr)+len(va) != len(all) || !slices.Equal(va, seen) || !slices.IsSorted(seen) {
		t.Fatalf("%d training + %d held-out dialogues of %d; Seen reported %d", len(tr), len(va), len(all), len(seen))
	}
	if train.HoldoutRule() == valid.HoldoutRule() || env.HoldoutRule() != "" {
		t.Errorf("hold-out rules %q, %q, %q: each side needs its own, none without", train.HoldoutRule(), valid.HoldoutRule(), env.HoldoutRule())
	}
}

// Errors of a streamed read name the file and the row, or the setting.
func TestEachDialogueStreamErrors(t *testing.T) {
	bad := writeDialogueCSV(t, 20, "d9999,1,bot2,who am I\n")
	few := writeDialogueCSV(t, 2, "")
	for _, tc := range []struct {
		name  string
		path  string
		share float64
		want  []string
	}{
		{"malformed row", bad, 0.5, []string{bad, "line 82", `speaker "bot2"`}},
		{"malformed row without a hold-out", bad, 0, []string{bad, "line 82"}},
		{"nothing held out", few, 1e-9, []string{"train.valid_share", "of 2 dialogues held out 0"}},
		{"all held out", few, 1 - 1e-9, []string{"train.valid_share", "held out 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := DataEnv{Read: datasets.ReadOptions{Files: &datasets.FileSet{Paths: []string{tc.path}}}}
			if tc.share > 0 {
				env.Holdout = &Holdout{Share: tc.share, Seed: 1}
			}
			err := env.EachDialogue(func(datasets.Dialogue) error { return nil })
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
