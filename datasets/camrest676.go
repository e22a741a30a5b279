package datasets

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
)

// CamRest676 (Wen et al. 2017) upstream, as the Sequicity repository has it: data/CamRest676/CamRest676.json,
// a JSON array of {dialogue_id, dial: [{turn, usr: {transcript}, sys: {sent}}]}: in each turn the user
// speaks first. All dialogues look for a restaurant in Cambridge.

const camRestBase = "data/CamRest676/CamRest676"

func camRestFiles(root string) ([]string, error) {
	if f := jsonFile(filepath.Join(root, camRestBase)); f != "" {
		return []string{f}, nil
	}
	return nil, fmt.Errorf("no %s.json in %s", camRestBase, root)
}

func readCamRest(root string, opt ReadOptions) ([]Dialogue, error) {
	files, err := camRestFiles(root)
	if err != nil {
		return nil, err
	}
	src := newSource("camrest676", files[0], opt)
	defer src.finish()
	var ds []Dialogue
	err = readFile(files[0], func(r io.Reader) (err error) {
		ds, err = parseCamRest(src, r)
		return err
	})
	return ds, err
}

type camRestDialogue struct {
	ID   *int `json:"dialogue_id"`
	Dial *[]struct {
		Usr *struct {
			Transcript *string `json:"transcript"`
		} `json:"usr"`
		Sys *struct {
			Sent *string `json:"sent"`
		} `json:"sys"`
	} `json:"dial"`
}

func (d *camRestDialogue) recordID() string {
	if d.ID == nil {
		return ""
	}
	return strconv.Itoa(*d.ID)
}

func parseCamRest(src *source, r io.Reader) ([]Dialogue, error) {
	var out []Dialogue
	err := readJSONArray(src, r, func(d *camRestDialogue) error {
		if d.ID == nil {
			return missing("dialogue_id")
		}
		if d.Dial == nil {
			return missing("dial")
		}
		dl := Dialogue{ID: d.recordID(), Corpus: "camrest676", Domain: "restaurant"}
		merge := src.opt.MergeSameSpeaker
		for j, t := range *d.Dial {
			if t.Usr == nil || t.Usr.Transcript == nil || t.Sys == nil || t.Sys.Sent == nil {
				return fmt.Errorf("turn %d: %w", j, missing("usr.transcript or sys.sent"))
			}
			dl.Turns = addTurn(dl.Turns, User, *t.Usr.Transcript, merge)
			dl.Turns = addTurn(dl.Turns, System, *t.Sys.Sent, merge)
		}
		out = append(out, dl)
		return nil
	})
	return out, err
}
