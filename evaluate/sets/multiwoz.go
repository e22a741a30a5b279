package sets

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"convrep/evaluate"
)

// MultiWOZ 2.1 as ConvLab-2 ships it (eval/multiwoz21/data/multiwoz/{val,test}.json.zip, each holding
// {split}.json: an object from dialogue id to {goal, log}; log alternates user (even index) and system (odd)
// turns, each with its text and dialog_act, an object from "Domain-Type" to [slot, value] pairs). The train
// split (8434 dialogues) is over the size limit of this copy and absent, so ReadMultiWOZActs leaves Train
// empty and says so in the notes; FewShot then returns an error. Dialogues are read in file order.
//
// A system turn's labels are the act types of its dialog_act keys, lower-cased, domain dropped (TOD-BERT's
// default; see data_acts.go). 79 system turns of each split have an empty dialog_act; they are not examples.

// multiwozSplits are the splits of the ConvLab-2 layout, all of which ReadMultiWOZResponses accepts.
var multiwozSplits = []string{"train", "val", "test"}

// ReadMultiWOZActs reads the MultiWOZ 2.1 dialogue act set from dir (.../eval/multiwoz21): Val and Test, and
// Train when data/multiwoz/train.json.zip is there (it is not in this copy).
func ReadMultiWOZActs(dir string) (*ActSet, error) {
	set := &ActSet{Dataset: "multiwoz21"}
	for _, sp := range []struct {
		name string
		dst  *[]ActExample
	}{{"train", &set.Train}, {"val", &set.Val}, {"test", &set.Test}} {
		path := multiwozPath(dir, sp.name)
		if sp.name == "train" && !fileExists(path) {
			set.Notes = append(set.Notes, "MultiWOZ 2.1: the train split (data/multiwoz/train.json.zip) is absent; Train is empty")
			continue
		}
		dialogues, err := readMultiWOZ(dir, sp.name)
		if err != nil {
			return nil, err
		}
		ex, c := actExamples(dialogues)
		*sp.dst = ex
		set.Notes = append(set.Notes, fmt.Sprintf("MultiWOZ 2.1: %d dialogues; system turns with acts, %s", len(dialogues), countNote(sp.name, c)))
	}
	set.Labels = labelVocab(set.Train, set.Val, set.Test)
	return set, nil
}

// ReadMultiWOZResponses builds the response-selection set of one split ("train", "val" or "test") of dir
// (.../eval/multiwoz21): one row per system turn with at least one previous turn, in file order; Contexts[i]
// holds all previous turns oldest first, Responses[i] the system utterance. As in TOD-BERT (utils_general.py
// drops empty system responses for "rs"), a system turn with empty text is skipped.
func ReadMultiWOZResponses(dir, split string) (*evaluate.RetrievalSet, error) {
	dialogues, err := readMultiWOZ(dir, split)
	if err != nil {
		return nil, err
	}
	set := &evaluate.RetrievalSet{Dataset: "multiwoz21", Source: multiwozPath(dir, split) + "#" + split + ".json", Split: split}
	for _, d := range dialogues {
		texts := make([]string, len(d.Turns))
		for i, t := range d.Turns {
			texts[i] = t.Text
		}
		for i, t := range d.Turns {
			if !t.System || i == 0 || t.Text == "" {
				continue
			}
			set.Contexts = append(set.Contexts, texts[:i:i])
			set.Responses = append(set.Responses, t.Text)
		}
	}
	if len(set.Responses) == 0 {
		return nil, fmt.Errorf("read %s: no system turn with a previous turn", set.Source)
	}
	return set, nil
}

func multiwozPath(dir, split string) string {
	return filepath.Join(dir, "data", "multiwoz", split+".json.zip")
}

// multiwozTurn is one entry of a dialogue's log.
type multiwozTurn struct {
	Text      *string                    `json:"text"`
	DialogAct map[string]json.RawMessage `json:"dialog_act"`
}

// readMultiWOZ reads one split's dialogues in file order, labelling system turns with their act types.
func readMultiWOZ(dir, split string) ([]actDialogue, error) {
	known := false
	for _, s := range multiwozSplits {
		known = known || s == split
	}
	if !known {
		return nil, fmt.Errorf("read multiwoz %s: split %q, want one of %s", dir, split, strings.Join(multiwozSplits, ", "))
	}
	path, member := multiwozPath(dir, split), split+".json"
	var out []actDialogue
	err := withZipMember(path, member, func(r io.Reader) error {
		where := fmt.Sprintf("read %s: member %s", path, member)
		dec := json.NewDecoder(r)
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if tok != json.Delim('{') {
			return fmt.Errorf("%s: want an object of dialogues, got %v", where, tok)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%s: after dialogue %d: %w", where, len(out), err)
			}
			id, _ := tok.(string)
			var d struct {
				Log []multiwozTurn `json:"log"`
			}
			if err := dec.Decode(&d); err != nil {
				return fmt.Errorf("%s: dialogue %d (%s): %w", where, len(out), id, err)
			}
			ad, err := multiwozDialogue(id, d.Log)
			if err != nil {
				return fmt.Errorf("%s: dialogue %d (%s): %w", where, len(out), id, err)
			}
			out = append(out, ad)
		}
		if len(out) == 0 {
			return fmt.Errorf("%s: no dialogues", where)
		}
		return nil
	})
	return out, err
}

// multiwozDialogue converts one log: even turns are the user's, odd ones the system's.
func multiwozDialogue(id string, log []multiwozTurn) (actDialogue, error) {
	d := actDialogue{ID: id, Turns: make([]actTurn, len(log))}
	for i, t := range log {
		if t.Text == nil {
			return d, fmt.Errorf("turn %d: no text", i)
		}
		turn := actTurn{System: i%2 == 1, Text: strings.TrimSpace(*t.Text)}
		if turn.System {
			var types []string
			for key := range t.DialogAct {
				domain, typ, ok := strings.Cut(key, "-")
				if !ok || domain == "" || typ == "" || strings.Contains(typ, "-") {
					return d, fmt.Errorf("turn %d: dialog_act key %q, want Domain-Type", i, key)
				}
				types = append(types, strings.ToLower(typ))
			}
			turn.Labels = sortedSet(types)
		}
		d.Turns[i] = turn
	}
	return d, nil
}

// fileExists reports whether path names an existing file or folder.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
