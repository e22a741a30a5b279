package evaluatecmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"convrep/evaluate"
	"convrep/evaluate/suite"
	"convrep/internal/shared"
	"convrep/models"
	"convrep/models/sbert"
)

// Bad input must fail with a clear error before any model is loaded or text embedded. The model given is a
// folder whose config.json is garbage: reaching the model would give a config error instead of the one wanted.
func TestBadInputFailsBeforeTheModel(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	write(t, filepath.Join(model, "config.json"), "not json")
	train := write(t, filepath.Join(dir, "train.csv"), "text,label\nbook a table,restaurant\nplay music,music\n")
	test := write(t, filepath.Join(dir, "test.csv"), "text,label\nreserve a table,restaurant\n")
	noLabel := write(t, filepath.Join(dir, "nolabel.csv"), "text,intent\nbook a table,restaurant\n")
	threeCols := write(t, filepath.Join(dir, "three.csv"), "id,text,domain\n1,book a table,restaurant\n")
	empty := write(t, filepath.Join(dir, "empty.jsonl"), "")
	unseen := write(t, filepath.Join(dir, "unseen.csv"), "text,label\nwhat's the weather,weather\n")
	withOOS := write(t, filepath.Join(dir, "withoos.csv"), "text,label\nreserve a table,restaurant\nwhat's the weather,oos\n")
	badActs := filepath.Join(dir, "pretrain")
	write(t, filepath.Join(badActs, "msr_e2e", "data", "taxi_all.tsv"), "1\t1\tts\tuser\tbook a cab now\trequest(taxi)\n1\t2\tts\tuser\tfor two people\tinform numberofpeople=2\n")
	checkRefusals(t, []refusal{
		{"label column missing", []string{"intent", "--model", model, "--train", noLabel, "--test", test, "--label-column", "label"}, `"label"`},
		{"no label column to take", []string{"intent", "--model", model, "--train", threeCols, "--test", test}, "Pass --label-column, one of: id, text, domain"},
		{"empty file", []string{"intent", "--model", model, "--train", train, "--test", empty}, "empty"},
		{"class with no training example", []string{"intent", "--model", model, "--train", train, "--test", unseen}, `label "weather" has no training example`},
		{"model path that does not exist", []string{"intent", "--model", filepath.Join(dir, "nope"), "--train", train, "--test", test}, filepath.Join(dir, "nope") + ": no such folder"},
		{"no model", []string{"intent", "--train", train, "--test", test}, "--model is required"},
		{"train without test", []string{"intent", "--model", model, "--train", train}, "go together"},
		{"unknown dataset", []string{"response", "--model", model, "--dataset", "nosuch"}, `"nosuch"`},
		{"bad seeds", []string{"intent", "--model", model, "--train", train, "--test", test, "--seeds", "9-1"}, "not a range"},
		{"bad shots", []string{"intent", "--model", model, "--train", train, "--test", test, "--shots", "0"}, "not a positive number"},
		{"oos without oos rows", []string{"oos", "--model", model, "--train", train, "--test", test}, "no out-of-scope test rows"},
		{"more candidates than responses", []string{"response", "--model", model, "--test", train, "--label-column", "label"}, "fewer than --candidates"},
		{"unknown oos protocol", []string{"oos", "--model", model, "--train", train, "--test", withOOS, "--oos-protocol", "nosuch"}, `--oos-protocol "nosuch"`},
		{"authors' oos without oos training rows", []string{"oos", "--model", model, "--train", train, "--test", withOOS}, "no out-of-scope training rows"},
		{"a model list outside response", []string{"intent", "--model", model + "," + model, "--train", train, "--test", test}, "only evaluate response"},
		{"ensemble member that does not exist", []string{"response", "--model", model + "," + filepath.Join(dir, "nope"), "--test", train}, "ensemble member 2"},
		{"ensemble with unpaired checkpoints", []string{"response", "--model", model + "," + model, "--checkpoint", "a,b,c", "--test", train}, "one checkpoint per model"},
		{"sr with a --test file", []string{"sr", "--model", model, "--test", test}, "takes no --train, --test"},
		{"sr on another dataset", []string{"sr", "--model", model, "--dataset", "clinc150"}, `--dataset "clinc150" has no semantic-retrieval data`},
		{"sr without queries", []string{"sr", "--model", model, "--queries", "0"}, "--queries 0"},
		{"sr without MSR-E2E", []string{"sr", "--model", model, "--data-root", dir}, "data/*_all.tsv"},
		{"sr with a malformed act", []string{"sr", "--model", model, "--data-root", badActs}, `taxi_all.tsv: line 2 (session 1): dialogue act "inform numberofpeople=2"`},
		{"unknown suite task", []string{"suite", "--model", model, "--output-dir", dir, "--tasks", "intent:nosuch"}, "unknown task"},
		{"a head without a checkpoint", []string{"intent", "--model", model, "--train", train, "--test", test, "--head", "contrast_head"}, "--head contrast_head reads the head from --checkpoint"},
		{"a head in fine-tuning", []string{"acts", "--model", model, "--head", "contrast_head"}, "-head"},
	})
}

// refusal is a command line evaluate must refuse, and a part of the error it must give.
type refusal struct {
	name string
	args []string
	want string
}

// checkRefusals runs each command line and wants its error, given before the model is read: an error naming
// "config" means the model's config.json was reached.
func checkRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := dispatch(context.Background(), c.args, zap.NewNop())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "config") {
				t.Fatalf("reached the model before refusing the data: %v", err)
			}
		})
	}
}

func TestParseSeeds(t *testing.T) {
	cases := []struct {
		in   string
		want string
		err  bool
	}{
		{"0-9", "[0 1 2 3 4 5 6 7 8 9]", false},
		{"3", "[3]", false},
		{"0,2, 5", "[0 2 5]", false},
		{"1-3,7", "[1 2 3 7]", false},
		{"x", "", true},
		{"5-1", "", true},
		{"-1", "", true},
	}
	for _, c := range cases {
		got, err := suite.ParseSeeds(c.in)
		if (err != nil) != c.err {
			t.Errorf("%q: error %v", c.in, err)
			continue
		}
		if !c.err && fmt.Sprint(got) != c.want {
			t.Errorf("%q: got %v, want %s", c.in, got, c.want)
		}
	}
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEnsembleMembers(t *testing.T) {
	dir := t.TempDir()
	exp := write(t, filepath.Join(dir, "exp.toml"), "")
	c1 := write(t, filepath.Join(dir, "step-1.safetensors"), "")
	c2 := write(t, filepath.Join(dir, "step-2.safetensors"), "")
	cases := []struct {
		name, ref, ckpt string
		want            []string // ref@checkpoint per member
		err             string
	}{
		{"one model", dir, "", []string{dir + "@"}, ""},
		{"one checkpoint", exp, c1, []string{exp + "@" + c1}, ""},
		{"checkpoints of one run", exp, c1 + ", " + c2, []string{exp + "@" + c1, exp + "@" + c2}, ""},
		{"models", dir + "," + dir + "/", "", []string{dir + "@", dir + "/@"}, ""},
		{"paired", exp + "," + exp, c2 + "," + c1, []string{exp + "@" + c2, exp + "@" + c1}, ""},
		{"unpaired", exp + "," + exp + "," + exp, c1 + "," + c2, nil, "one checkpoint per model"},
		{"missing checkpoint", exp, c1 + "," + filepath.Join(dir, "nope.safetensors"), nil, "ensemble member 2"},
		{"empty", "", "", nil, "--model is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := suite.EnsembleMembers(suite.Model{Ref: c.ref, Checkpoint: c.ckpt, Batch: 7})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range got {
				names = append(names, m.Ref+"@"+m.Checkpoint)
				if m.Batch != 7 {
					t.Errorf("member %s lost the other settings: %+v", m.Ref, m)
				}
			}
			if fmt.Sprint(names) != fmt.Sprint(c.want) {
				t.Errorf("members %v, want %v", names, c.want)
			}
		})
	}
}

// Where a task names no length (--max-length 0), a folder declaring max_seq_length 8 is embedded at 8 tokens,
// as sentence-transformers embeds it; a length given wins; a folder declaring none keeps the model's limit.
func TestDeclaredMaxSeqLength(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "model")
	if err := os.CopyFS(plain, os.DirFS(shared.MustPath(t, "fixtures", "tiny-bert"))); err != nil {
		t.Fatal(err)
	}
	declaring := filepath.Join(t.TempDir(), "model")
	if err := os.CopyFS(declaring, os.DirFS(plain)); err != nil {
		t.Fatal(err)
	}
	if err := sbert.Write(declaring, sbert.Layout{Pooling: models.Mean, MaxSeqLength: 8, Dim: 32}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir       string
		flag      int
		want      int
		withSuite int // the suite's per-task length over the session (0: none given)
	}{
		{declaring, 0, 8, 0},
		{declaring, 16, 16, 0},
		{declaring, 0, 64, 64},
		{plain, 0, 0, 0},
	} {
		s, err := suite.Open(context.Background(), suite.Model{Ref: c.dir, Device: "cpu", MaxLength: c.flag, Batch: 4}, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		s = suite.WithMaxLength(s, c.withSuite)
		for _, e := range []evaluate.Encoder{s.Enc, s.Context} {
			if got := e.(*models.Embedder).MaxLength; got != c.want {
				t.Errorf("%s, --max-length %d, suite length %d: encoders cut at %d, want %d", c.dir, c.flag, c.withSuite, got, c.want)
			}
		}
	}
}
