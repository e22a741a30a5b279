package evaluatecmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"convrep/evaluate"
	"convrep/evaluate/sets"
	"convrep/internal/shared"
)

// Few-shot evaluation on a user's file of 5 training rows per label (testdata/intents_train.csv: refund,
// cancel, track, password), as the issue ran it (--shots 5,20), and its neighbours. Each case asserts the
// support sets' rows per label (in the split files written), the shots_used the result records, the warning
// naming the labels that fell short, and the refusal of a k no label can fill.
func TestShotsOnAUserFile(t *testing.T) {
	model := shared.MustPath(t, "fixtures", "tiny-bert")
	test := filepath.Join("testdata", "intents_test.csv")
	fivePerLabel := filepath.Join("testdata", "intents_train.csv")
	body, err := os.ReadFile(fivePerLabel)
	if err != nil {
		t.Fatal(err)
	}
	// The same file with 2 of cancel's rows left out: cancel has 3 rows, the others 5.
	var kept []string
	dropped := 0
	for _, line := range strings.SplitAfter(string(body), "\n") {
		if strings.HasSuffix(strings.TrimSpace(line), ",cancel") && dropped < 2 {
			dropped++
			continue
		}
		kept = append(kept, line)
	}
	uneven := write(t, filepath.Join(t.TempDir(), "uneven_train.csv"), strings.Join(kept, ""))
	all := func(n int) map[string]int { return map[string]int{"refund": n, "cancel": n, "track": n, "password": n} }

	for _, tc := range []struct {
		name    string
		task    string
		train   string
		shots   string
		refused string                     // part of the error; "" when the run goes through
		support map[int]map[string]int     // rows per label in every seed's split file
		used    map[int]evaluate.ShotsUsed // the rows' shots_used
		warned  []string                   // parts of the one warning per short k, in order; none when nil
	}{
		{name: "5 per label, --shots 5,20", task: "intent", train: fivePerLabel, shots: "5,20",
			refused: "--shots: testdata/intents_train.csv: 20-shot: no label has 20 training rows (the most any label has is 5), so no support set could hold 20: the largest shot count that can be filled is 5"},
		{name: "5 per label, --shots 5", task: "intent", train: fivePerLabel, shots: "5",
			support: map[int]map[string]int{5: all(5)},
			used:    map[int]evaluate.ShotsUsed{5: {Min: 5, Max: 5}}},
		{name: "5 per label, --shots 3,4 (fewer than 2k rows, still k)", task: "intent", train: fivePerLabel, shots: "3,4",
			support: map[int]map[string]int{3: all(3), 4: all(4)},
			used:    map[int]evaluate.ShotsUsed{3: {Min: 3, Max: 3}, 4: {Min: 4, Max: 4}}},
		{name: "cancel with 3 rows, --shots 1,5", task: "intent", train: uneven, shots: "1,5",
			support: map[int]map[string]int{1: all(1), 5: {"refund": 5, "cancel": 3, "track": 5, "password": 5}},
			used:    map[int]evaluate.ShotsUsed{1: {Min: 1, Max: 1}, 5: {Min: 3, Max: 5, Short: map[string]int{"cancel": 3}}},
			warned:  []string{"uneven_train.csv: 5-shot: 1 of 4 labels have fewer than 5 training rows", `shots_used): "cancel" (3)`}},
		{name: "cancel with 3 rows, --shots 5,6", task: "intent", train: uneven, shots: "5,6",
			refused: "6-shot: no label has 6 training rows (the most any label has is 5)"},
		{name: "oos, 5 per label, --shots 5,20", task: "oos", train: fivePerLabel, shots: "5,20",
			refused: "the largest shot count that can be filled is 5"},
		{name: "finetune-intent, cancel with 3 rows, --shots 5", task: "finetune-intent", train: uneven, shots: "5",
			support: map[int]map[string]int{5: {"refund": 5, "cancel": 3, "track": 5, "password": 5}},
			used:    map[int]evaluate.ShotsUsed{5: {Min: 3, Max: 5, Short: map[string]int{"cancel": 3}}},
			warned:  []string{"uneven_train.csv: 5-shot: 1 of 4 labels have fewer than 5 training rows", `shots_used): "cancel" (3)`}},
		{name: "finetune-intent, 5 per label, --shots 5,20", task: "finetune-intent", train: fivePerLabel, shots: "5,20",
			refused: "the largest shot count that can be filled is 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out, splits := filepath.Join(dir, "result.json"), filepath.Join(dir, "splits")
			testFile := test
			if tc.task == "oos" {
				testFile = write(t, filepath.Join(dir, "with_oos.csv"), "text,label\ncancel it now,cancel\nwhat is the weather,oos\n")
			}
			args := []string{tc.task, "--model", model, "--train", tc.train, "--test", testFile, "--label-column", "label", "--shots", tc.shots,
				"--seeds", "0-2", "--max-length", "16", "--threads", "1", "--quiet", "--write-splits", splits, "--output", out}
			switch tc.task {
			case "oos":
				args = append(args, "--oos-protocol", "paper")
			case "finetune-intent":
				args = append(args, "--epochs", "1", "--ft-batch-size", "4")
			}
			core, logs := observer.New(zap.WarnLevel)
			err := dispatch(context.Background(), args, zap.New(core))
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("error %v, want one containing %q", err, tc.refused)
				}
				if _, statErr := os.Stat(out); statErr == nil {
					t.Error("a refused run wrote a result")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for _, e := range logs.All() {
				if strings.Contains(e.Message, "training rows") { // the shots' warnings, not fine-tuning's own
					warnings = append(warnings, e.Message)
				}
			}
			if tc.warned == nil && len(warnings) > 0 {
				t.Errorf("warnings %q, want none", warnings)
			}
			if tc.warned != nil {
				if len(warnings) != 1 {
					t.Fatalf("warnings %q, want one", warnings)
				}
				for _, part := range tc.warned {
					if !strings.Contains(warnings[0], part) {
						t.Errorf("warning %q, want it to contain %q", warnings[0], part)
					}
				}
			}
			for k, want := range tc.support {
				for seed := range uint64(3) {
					sf, err := evaluate.ReadSupportFile(filepath.Join(splits, evaluate.SplitFileName("intents_test", tc.task, k, seed)), mustRead(t, tc.train))
					if err != nil {
						t.Fatal(err)
					}
					got := map[string]int{}
					for _, s := range sf.Support {
						got[s.Label] = len(s.Rows)
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("k=%d seed=%d: support rows per label %v, want %v", k, seed, got, want)
					}
				}
			}
			res, err := evaluate.ReadResult(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) == 0 {
				t.Fatal("no rows")
			}
			seen := map[int]bool{}
			for _, r := range res.Rows {
				k := int(r.Settings["shots"].(float64))
				raw, _ := json.Marshal(r.Settings["shots_used"])
				var got evaluate.ShotsUsed
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.used[k]) {
					t.Errorf("%s %s: shots_used %s, want %+v", r.Variant, r.Metric, raw, tc.used[k])
				}
				seen[k] = true
			}
			if len(seen) != len(tc.used) {
				t.Errorf("rows for shot counts %v, want %d", seen, len(tc.used))
			}
			md, err := os.ReadFile(strings.TrimSuffix(out, ".json") + ".md")
			if err != nil {
				t.Fatal(err)
			}
			for k, u := range tc.used {
				if len(u.Short) > 0 && !strings.Contains(string(md), "got fewer than") {
					t.Errorf("k=%d fell short, and the Markdown does not say so:\n%s", k, md)
				}
			}
		})
	}
}

// mustRead reads a user's training file as the evaluation reads it.
func mustRead(t *testing.T, path string) evaluate.Split {
	t.Helper()
	s, err := sets.ReadUserFile(path, "text", "label")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A --train or --test file that does not exist is named once in the error, whichever way it is reached (the
// label column found from the header, or given), and before the model is read.
func TestMissingFileNamedOnce(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	write(t, filepath.Join(model, "config.json"), "not json")
	train := write(t, filepath.Join(dir, "train.csv"), "text,label\nbook a table,restaurant\nplay music,music\n")
	missing := filepath.Join(dir, "intent_test.csv")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"--test, label column found", []string{"intent", "--model", model, "--train", train, "--test", missing}},
		{"--test, label column given", []string{"intent", "--model", model, "--train", train, "--test", missing, "--label-column", "label"}},
		{"--train", []string{"intent", "--model", model, "--train", missing, "--test", train}},
		{"oos --test", []string{"oos", "--model", model, "--train", train, "--test", missing}},
		{"response --test", []string{"response", "--model", model, "--test", missing, "--label-column", "label"}},
		{"finetune-intent --train", []string{"finetune-intent", "--model", model, "--train", missing, "--test", train}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := dispatch(context.Background(), tc.args, zap.NewNop())
			if err == nil || !strings.Contains(err.Error(), "no such file") || strings.Count(err.Error(), missing) != 1 {
				t.Fatalf("error %v, want one naming %s once and saying no such file", err, missing)
			}
			if strings.Contains(err.Error(), "config") {
				t.Fatalf("reached the model first: %v", err)
			}
		})
	}
}
