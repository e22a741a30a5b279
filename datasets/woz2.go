package datasets

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
)

// WOZ 2.0 (Wen et al. 2017; Mrkšić et al. 2017) upstream, as the neural-belief-tracker repository has it:
// data/woz/woz_{train,validate,test}_en.json, each a JSON array of {dialogue_idx, dialogue: [{turn_idx,
// system_transcript, transcript, ...}]}. A turn pairs the system's words before the user's reply: the first
// one's system_transcript is empty. All dialogues look for a restaurant in Cambridge.

var wozSplits = []string{"train", "validate", "test"}

func wozFiles(root string) ([]string, error) {
	var files []string
	for _, split := range wozSplits {
		if f := jsonFile(filepath.Join(root, "data", "woz", "woz_"+split+"_en")); f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no data/woz/woz_{train,validate,test}_en.json in %s", root)
	}
	return files, nil
}

func readWOZ(root string, opt ReadOptions) ([]Dialogue, error) {
	files, err := wozFiles(root)
	if err != nil {
		return nil, err
	}
	return readFiles("woz2", files, opt, func(src *source, path string, r io.Reader) ([]Dialogue, error) {
		return parseWOZ(src, wozSplit(path), r)
	})
}

// wozSplit is the split in a file's name: "woz_validate_en.json" -> "validate".
func wozSplit(path string) string {
	for _, s := range wozSplits {
		if baseNoExt(path) == "woz_"+s+"_en" {
			return s
		}
	}
	return baseNoExt(path)
}

type wozDialogue struct {
	Idx   *int `json:"dialogue_idx"`
	Turns *[]struct {
		System *string `json:"system_transcript"`
		User   *string `json:"transcript"`
	} `json:"dialogue"`
}

func (d *wozDialogue) recordID() string {
	if d.Idx == nil {
		return ""
	}
	return strconv.Itoa(*d.Idx)
}

// parseWOZ parses one woz_*_en.json. IDs are split/dialogue_idx: every split numbers from 0.
func parseWOZ(src *source, split string, r io.Reader) ([]Dialogue, error) {
	var out []Dialogue
	err := readJSONArray(src, r, func(d *wozDialogue) error {
		if d.Idx == nil {
			return missing("dialogue_idx")
		}
		if d.Turns == nil {
			return missing("dialogue")
		}
		dl := Dialogue{ID: split + "/" + d.recordID(), Corpus: "woz2", Domain: "restaurant"}
		merge := src.opt.MergeSameSpeaker
		for j, t := range *d.Turns {
			if t.System == nil || t.User == nil {
				return fmt.Errorf("turn %d: %w", j, missing("system_transcript or transcript"))
			}
			dl.Turns = addTurn(dl.Turns, System, *t.System, merge) // dropped when empty, as in the first turn
			dl.Turns = addTurn(dl.Turns, User, *t.User, merge)
		}
		out = append(out, dl)
		return nil
	})
	return out, err
}
