package datasets

import (
	"fmt"
	"io"
	"path/filepath"
)

// Frames (El Asri et al. 2017) upstream: frames.json in ToDDAPT's data_ptm/frames/original_data.zip, a JSON
// array of {id, turns: [{author: user|wizard, text}]} (70 MB, read as a stream). All dialogues book trips:
// the domain is travel, as ToDDAPT sets it.

const framesZip = "data_ptm/frames/original_data.zip"

func framesFiles(root string) ([]string, error) {
	if zs := existing(filepath.Join(root, framesZip)); len(zs) > 0 {
		return zs, nil
	}
	return nil, fmt.Errorf("no %s in %s", framesZip, root)
}

func readFrames(root string, opt ReadOptions) ([]Dialogue, error) {
	files, err := framesFiles(root)
	if err != nil {
		return nil, err
	}
	return readZipMembers("frames", files[0], []string{"frames.json"}, opt, parseFrames)
}

type framesDialogue struct {
	ID    *string `json:"id"`
	Turns *[]struct {
		Author *string `json:"author"`
		Text   *string `json:"text"`
	} `json:"turns"`
}

func (d *framesDialogue) recordID() string { return deref(d.ID) }

func parseFrames(src *source, r io.Reader) ([]Dialogue, error) {
	var out []Dialogue
	err := readJSONArray(src, r, func(d *framesDialogue) error {
		if deref(d.ID) == "" {
			return missing("id")
		}
		if d.Turns == nil {
			return missing("turns")
		}
		dl := Dialogue{ID: *d.ID, Corpus: "frames", Domain: "travel"}
		for j, t := range *d.Turns {
			if err := dl.addRecord("turn", j, t.Author, t.Text, "author or text", "user", "wizard", src.opt.MergeSameSpeaker); err != nil {
				return err
			}
		}
		out = append(out, dl)
		return nil
	})
	return out, err
}
