package evaluatecmd

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/evaluate/suite"
	"convrep/internal/shared"
)

// tinyMultiWOZ writes a MultiWOZ 2.1 evaluation root (multiwoz21/data/multiwoz/{val,test}.json.zip, no train
// split, as here) of n two-turn dialogues per split and returns the root.
func tinyMultiWOZ(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "multiwoz21", "data", "multiwoz")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, split := range []string{"val", "test"} {
		dialogues := map[string]any{}
		for i := range n {
			dialogues[fmt.Sprintf("%s%02d.json", strings.ToUpper(split), i)] = map[string]any{
				"goal": map[string]any{},
				"log": []map[string]any{
					{"text": fmt.Sprintf("i need a hotel number %d in the %s", i, split), "dialog_act": map[string]any{}},
					{"text": fmt.Sprintf("hotel %d is booked for you", i), "dialog_act": map[string]any{"Booking-Book": [][]string{{"none", "none"}}}},
				},
			}
		}
		body, err := json.Marshal(dialogues)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, split+".json.zip"))
		if err != nil {
			t.Fatal(err)
		}
		z := zip.NewWriter(f)
		w, err := z.Create(split + ".json")
		if err == nil {
			_, err = w.Write(body)
		}
		if err == nil {
			err = z.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// MultiWOZ's train split is absent, so its pairs come from the validation dialogues, and the note says so;
// user files are a train split of their own and get no note.
func TestResponseSplitsNote(t *testing.T) {
	root := tinyMultiWOZ(t, 4)
	train, test, note, err := suite.ResponseSplits(suite.Data{Dataset: "multiwoz", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(train.Source, "val.json") || !strings.Contains(test.Source, "test.json") {
		t.Errorf("train from %q, test from %q", train.Source, test.Source)
	}
	if !strings.Contains(note, "no train split") || !strings.Contains(note, "validation") || !strings.Contains(note, "4 (context, response) pairs") {
		t.Errorf("note %q", note)
	}

	dir := t.TempDir()
	trainFile := write(t, filepath.Join(dir, "train.csv"), "text,label\nhello,hi there\nbook it,done\n")
	testFile := write(t, filepath.Join(dir, "test.csv"), "text,label\nthanks,bye\n")
	if _, _, note, err := suite.ResponseSplits(suite.Data{Dataset: "mine", Train: trainFile, Test: testFile, TextColumn: "text", LabelColumn: "label"}); err != nil || note != "" {
		t.Errorf("user files: note %q, error %v; want no note", note, err)
	}
}

// The note reaches the JSON and the Markdown that finetune-response writes.
func TestFinetuneResponseNotesMultiWOZ(t *testing.T) {
	model := shared.MustPath(t, "fixtures", "tiny-bert")
	if _, err := os.Stat(filepath.Join(model, "config.json")); err != nil {
		t.Fatal(err)
	}
	root := tinyMultiWOZ(t, 6)
	out := filepath.Join(t.TempDir(), "ft.json")
	args := []string{"finetune-response", "--model", model, "--dataset", "multiwoz", "--data-root", root, "--candidates", "3",
		"--seeds", "0", "--epochs", "1", "--ft-batch-size", "4", "--max-length", "16", "--threads", "1", "--quiet", "--output", out}
	if err := dispatch(context.Background(), args, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	var res evaluate.Result
	body, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(body, &res)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := "multiwoz21 has no train split here: fine-tuning trains on the 6 (context, response) pairs of its validation dialogues"
	if len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], want) {
		t.Errorf("JSON notes %q, want one starting %q", res.Notes, want)
	}
	if len(res.Rows) == 0 || res.Rows[0].Settings["train_pairs"] != 6.0 {
		t.Errorf("rows %+v: want train_pairs 6", res.Rows)
	}
	md, err := os.ReadFile(strings.TrimSuffix(out, ".json") + ".md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), want) {
		t.Errorf("the Markdown does not carry the note:\n%s", md)
	}
}
