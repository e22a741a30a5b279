package sets

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"convrep/internal/shared"

	"convrep/evaluate"
)

// The hand-made log testdata/ubuntu/2001-01-01 has, from its cutoff (line 2) on: conversation A (carol and
// dave, with a "* carol" action, a "Carol" line, an empty message and a "===" action linked in), a system
// message linked only to itself, and conversation B (frank twice, then gina); lines 0 and 2 form a
// conversation reaching before the cutoff. 2001-01-02 holds one three-message conversation C.
var (
	ubuntuConvA = []ubuntuMessage{
		{3, "carol", "how do I mount a usb stick?"},
		{4, "dave", "carol: is it formatted?"},
		{6, "carol", "dave: yes, fat32"},
		{7, "carol", "plugs it in again"},
		{8, "Carol", "still nothing shows up"},
		{9, "dave", "carol: run dmesg"},
		{12, "carol", "dave: it says sdb1 <unconvertable>"},
		{14, "dave", "carol: sudo mount /dev/sdb1 /mnt"},
	}
	ubuntuConvB = []ubuntuMessage{
		{10, "frank", "anyone here use kde?"},
		{15, "frank", "hello?"},
		{16, "gina", "frank: yes, what is up"},
	}
	ubuntuConvC = []ubuntuMessage{
		{0, "hal", "is grub2 the default now?"},
		{1, "ivy", "hal: yes, since 9.10"},
		{2, "hal", "ivy: thanks"},
	}
)

func TestUbuntuConversations(t *testing.T) {
	for _, tc := range []struct {
		file string
		want [][]ubuntuMessage
	}{
		{"2001-01-01.annotation.txt", [][]ubuntuMessage{ubuntuConvA, ubuntuConvB}},
		{"2001-01-02.annotation.txt", [][]ubuntuMessage{ubuntuConvC}},
	} {
		got, err := ubuntuConversations(filepath.Join("testdata", "ubuntu", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: conversations\n got %v\nwant %v", tc.file, got, tc.want)
		}
	}
}

func TestUbuntuSplitPoints(t *testing.T) {
	for _, tc := range []struct {
		conv       []ubuntuMessage
		minContext int
		want       []int
	}{
		{ubuntuConvA, 1, []int{1, 2, 5, 6, 7}}, // 3 and 4 follow carol (speakers compare ignoring case)
		{ubuntuConvA, 4, []int{5, 6, 7}},
		{ubuntuConvA, 7, []int{7}},
		{ubuntuConvA, 8, nil},
		{ubuntuConvB, 1, []int{2}},
		{ubuntuConvB, 3, nil},
	} {
		if got := ubuntuSplitPoints(tc.conv, tc.minContext); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("split points of %q.. with MinContext %d = %v, want %v", tc.conv[0].Text, tc.minContext, got, tc.want)
		}
	}
}

// ubuntuTexts returns the texts of c[from:to].
func ubuntuTexts(c []ubuntuMessage, from, to int) []string {
	var out []string
	for _, m := range c[from:to] {
		out = append(out, m.Text)
	}
	return out
}

func TestReadUbuntuIRCHandMade(t *testing.T) {
	dir := filepath.Join("testdata", "ubuntu")

	// MinContext 7: only A's last message qualifies, whatever the seed.
	s, err := ReadUbuntuIRC(dir, UbuntuOptions{MinContext: 7, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := &evaluate.RetrievalSet{Dataset: "ubuntu", Source: dir + "#min_context=7,max_context=0,split_seed=5",
		Contexts: [][]string{ubuntuTexts(ubuntuConvA, 0, 7)}, Responses: []string{"carol: sudo mount /dev/sdb1 /mnt"}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("MinContext 7:\n got %#v\nwant %#v", s, want)
	}

	// Otherwise the draw is redone here from the rule written in the doc comment, with the stream word spelled
	// out: one Uint64 per conversation with a split point (A, then B, then C from the second file).
	for _, tc := range []struct {
		opt    UbuntuOptions
		splits [][]int // valid split points of A, B, C
	}{
		{UbuntuOptions{MinContext: 2}, [][]int{{2, 5, 6, 7}, {2}, {2}}},
		{UbuntuOptions{MinContext: 2, MaxContext: 3}, [][]int{{2, 5, 6, 7}, {2}, {2}}},
		{UbuntuOptions{MinContext: 5, MaxContext: 5}, [][]int{{5, 6, 7}, nil, nil}},
		{UbuntuOptions{}, [][]int{{5, 6, 7}, nil, nil}}, // MinContext 4
	} {
		for _, seed := range []uint64{0, 1, 2, 3, 42} {
			tc.opt.Seed = seed
			s, err := ReadUbuntuIRC(dir, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			g := rand.NewPCG(seed, 0x636f6e7672657033)
			var ctxs [][]string
			var resps []string
			for i, conv := range [][]ubuntuMessage{ubuntuConvA, ubuntuConvB, ubuntuConvC} {
				if len(tc.splits[i]) == 0 {
					continue
				}
				k := tc.splits[i][g.Uint64()%uint64(len(tc.splits[i]))]
				from := 0
				if tc.opt.MaxContext > 0 {
					from = max(0, k-tc.opt.MaxContext)
				}
				ctxs = append(ctxs, ubuntuTexts(conv, from, k))
				resps = append(resps, conv[k].Text)
			}
			if !reflect.DeepEqual(s.Contexts, ctxs) || !reflect.DeepEqual(s.Responses, resps) {
				t.Errorf("%+v:\n got %q -> %q\nwant %q -> %q", tc.opt, s.Contexts, s.Responses, ctxs, resps)
			}
		}
	}

	// The zero value means MinContext 4: A (5, 6 or 7) alone; B and C are too short.
	s, err = ReadUbuntuIRC(dir, UbuntuOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSource := dir + "#min_context=4,max_context=0,split_seed=0"
	if len(s.Responses) != 1 || len(s.Contexts[0]) < 5 || s.Source != wantSource {
		t.Errorf("zero options: got %d rows, context %q, source %q", len(s.Responses), s.Contexts, s.Source)
	}
}

// writeUbuntuDir writes x.ascii.txt and x.annotation.txt (each left out when nil) into a temporary folder.
func writeUbuntuDir(t *testing.T, log, ann *string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]*string{"x.ascii.txt": log, "x.annotation.txt": ann} {
		if content == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(*content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadUbuntuIRCErrors(t *testing.T) {
	str := func(s string) *string { return &s }
	goodLog := str("[10:00] <a> hi\n[10:01] <b> a: hello\n=== c has quit\n[10:02] <a> b: thanks\n")
	goodAnn := str("0 0 -\n0 1 -\n2 2 -\n1 3 -\n")
	for _, tc := range []struct {
		name     string
		log, ann *string
		opt      UbuntuOptions
		want     string
	}{
		{"empty folder", nil, nil, UbuntuOptions{}, "no *.annotation.txt file"},
		{"missing log", nil, goodAnn, UbuntuOptions{}, "x.annotation.txt: its log x.ascii.txt is missing"},
		{"bad number", goodLog, str("0 0 -\n0 one -\n"), UbuntuOptions{},
			`x.annotation.txt:2: want a link "i j -" of line numbers, got "0 one -"`},
		{"no dash", goodLog, str("0 0 -\n\n0 1\n"), UbuntuOptions{}, `x.annotation.txt:3: want a link "i j -", got "0 1"`},
		{"negative", goodLog, str("-1 0 -\n"), UbuntuOptions{}, `x.annotation.txt:1: want a link "i j -" of line numbers`},
		{"past the log", goodLog, str(*goodAnn + "3 4 -\n"), UbuntuOptions{},
			"x.annotation.txt:5: link 3 4 names line 4, but x.ascii.txt has 4 lines (0-3)"},
		{"no links", goodLog, str("\n"), UbuntuOptions{}, "x.annotation.txt: no links"},
		{"bad log line", str("[10:00] <a> hi\nhello there\n"), str("0 0 -\n0 1 -\n"), UbuntuOptions{},
			`x.ascii.txt:2 (message 1): want "[hh:mm] <nick> text"`},
		{"too short", goodLog, goodAnn, UbuntuOptions{}, "no conversation has a split point with 4 context messages"},
		{"negative option", goodLog, goodAnn, UbuntuOptions{MinContext: -1}, "must not be negative"},
		{"max below min", goodLog, goodAnn, UbuntuOptions{MaxContext: 2}, "MaxContext 2 is below MinContext 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadUbuntuIRC(writeUbuntuDir(t, tc.log, tc.ann), tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The same files read well with MinContext 2: a's "b: thanks" after b, the quit dropped.
	s, err := ReadUbuntuIRC(writeUbuntuDir(t, goodLog, goodAnn), UbuntuOptions{MinContext: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"hi", "a: hello"}}
	if !reflect.DeepEqual(s.Contexts, want) || !reflect.DeepEqual(s.Responses, []string{"b: thanks"}) {
		t.Errorf("got %q -> %q", s.Contexts, s.Responses)
	}
}

// TestReadUbuntuIRCReal reads the three splits of the shared copy with the default options and checks the
// counts, the shape of every row, that the test split yields 100-candidate lists, and the seed's effect.
func TestReadUbuntuIRCReal(t *testing.T) {
	root := shared.MustPath(t, "data", "eval", "ubuntu_irc", "data")
	want := map[string]int{"train": 2552, "dev": 103, "test": 168} // of 8633, 296 and 542 complete conversations
	sets := map[string]*evaluate.RetrievalSet{}
	for _, split := range []string{"train", "dev", "test"} {
		start := time.Now()
		s, err := ReadUbuntuIRC(filepath.Join(root, split), UbuntuOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d examples, read in %v", split, len(s.Responses), time.Since(start))
		if len(s.Responses) != want[split] || len(s.Contexts) != want[split] {
			t.Errorf("%s: %d responses and %d contexts, want %d", split, len(s.Responses), len(s.Contexts), want[split])
		}
		for i, ctx := range s.Contexts {
			if len(ctx) < DefaultUbuntuMinContext || s.Responses[i] == "" {
				t.Fatalf("%s row %d: %d context messages, response %q", split, i, len(ctx), s.Responses[i])
			}
			for _, turn := range ctx { // markup stripping is checked on the hand-made log: users paste log lines
				if turn == "" {
					t.Fatalf("%s row %d: empty context turn", split, i)
				}
			}
		}
		sets[split] = s
	}

	for _, split := range []string{"dev", "test"} { // dev's 103 rows are just enough for 100 candidates
		lists, err := evaluate.SampleCandidates(sets[split].Responses, 100, 1)
		if err != nil {
			t.Fatalf("%s: %v", split, err)
		}
		if len(lists) != len(sets[split].Responses) || len(lists[0].Rows) != 100 {
			t.Errorf("%s candidate lists: %d lists of %d", split, len(lists), len(lists[0].Rows))
		}
	}

	test := sets["test"]
	// Same seed, same set; another seed moves some split points but not the number of rows.
	again, err := ReadUbuntuIRC(filepath.Join(root, "test"), UbuntuOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, test) {
		t.Error("two reads with seed 1 differ")
	}
	other, err := ReadUbuntuIRC(filepath.Join(root, "test"), UbuntuOptions{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for i := range other.Responses {
		if other.Responses[i] != test.Responses[i] {
			moved++
		}
	}
	if len(other.Responses) != len(test.Responses) || moved == 0 {
		t.Errorf("seed 2: %d rows (seed 1: %d), %d responses moved", len(other.Responses), len(test.Responses), moved)
	}
	t.Logf("test: seed 2 moves the split point of %d of %d conversations", moved, len(test.Responses))
}

// BenchmarkReadUbuntuIRCTest times reading the test split (10 logs of 1,500 lines).
func BenchmarkReadUbuntuIRCTest(b *testing.B) {
	dir := shared.MustPath(b, "data", "eval", "ubuntu_irc", "data", "test")
	for b.Loop() {
		if _, err := ReadUbuntuIRC(dir, UbuntuOptions{Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
