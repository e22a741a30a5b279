package datasets

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
)

// Taskmaster (Byrne et al. 2019 and later releases) upstream, one folder per release:
//
//	TM-1-2019/self-dialogs.json, TM-1-2019/woz-dialogs.json
//	TM-2-2020/data/<domain>.json
//	TM-3-2020/data/data_NN.json
//	TM-4-2024/data/data_NN.json (here gzip-compressed)
//
// each a JSON array of {conversation_id (conversationId in TM-1's notes), vertical (TM-3, TM-4),
// utterances: [{speaker: USER|ASSISTANT (any case), text}]}. Only TM-4's files are here: the rest are read
// when present and skipped without complaint when absent (TM-1's sample.json documents the format and is
// not a dialogue file). The domain is the vertical, else TM-2's file name, else TM-1's instruction_id
// without its number ("restaurant-table-2" -> "restaurant-table").

// taskmasterFiles lists each release's dialogue files, releases in order.
func taskmasterFiles(root string) ([]string, error) {
	var files []string
	for _, base := range []string{"TM-1-2019/self-dialogs", "TM-1-2019/woz-dialogs"} {
		if f := jsonFile(filepath.Join(root, filepath.FromSlash(base))); f != "" {
			files = append(files, f)
		}
	}
	later, err := globJSON("*", filepath.Join(root, "TM-2-2020", "data"), filepath.Join(root, "TM-3-2020", "data"),
		filepath.Join(root, "TM-4-2024", "data"))
	if err != nil {
		return nil, err
	}
	if files = append(files, later...); len(files) == 0 {
		return nil, fmt.Errorf("no Taskmaster dialogue files in %s (want TM-1-2019/{self,woz}-dialogs.json, TM-{2,3,4}-*/data/*.json[.gz])", root)
	}
	return files, nil
}

func readTaskmaster(root string, opt ReadOptions) ([]Dialogue, error) {
	files, err := taskmasterFiles(root)
	if err != nil {
		return nil, err
	}
	parts, err := inParallel(len(files), func(i int) ([]Dialogue, error) {
		src := newSource("taskmaster", files[i], opt)
		defer src.finish()
		fileDomain := ""
		if filepath.Base(filepath.Dir(filepath.Dir(files[i]))) == "TM-2-2020" {
			fileDomain = baseNoExt(files[i])
		}
		var ds []Dialogue
		err := readFile(files[i], func(r io.Reader) (err error) {
			ds, err = parseTaskmaster(src, fileDomain, r)
			return err
		})
		return ds, err
	})
	return concat(parts), err
}

type taskmasterDialogue struct {
	ID               *string `json:"conversation_id"`
	IDCamel          *string `json:"conversationId"`
	Vertical         *string `json:"vertical"`
	Instruction      *string `json:"instruction_id"`
	InstructionCamel *string `json:"instructionId"`
	Utterances       *[]struct {
		Speaker *string `json:"speaker"`
		Text    *string `json:"text"`
	} `json:"utterances"`
}

func (d *taskmasterDialogue) recordID() string {
	if d.ID != nil {
		return *d.ID
	}
	return deref(d.IDCamel)
}

var instructionNumber = regexp.MustCompile(`-\d+$`)

// parseTaskmaster parses one file of dialogues; fileDomain is the domain a TM-2 file is named after.
func parseTaskmaster(src *source, fileDomain string, r io.Reader) ([]Dialogue, error) {
	var out []Dialogue
	err := readJSONArray(src, r, func(d *taskmasterDialogue) error {
		id := d.recordID()
		if id == "" {
			return missing("conversation_id")
		}
		if d.Utterances == nil {
			return missing("utterances")
		}
		domain := deref(d.Vertical)
		if domain == "" {
			domain = fileDomain
		}
		if domain == "" {
			ins := deref(d.Instruction)
			if ins == "" {
				ins = deref(d.InstructionCamel)
			}
			domain = instructionNumber.ReplaceAllString(ins, "")
		}
		dl := Dialogue{ID: id, Corpus: "taskmaster", Domain: domainName(domain)}
		for j, u := range *d.Utterances {
			if err := dl.addRecord("utterance", j, u.Speaker, u.Text, "speaker or text", "user", "assistant", src.opt.MergeSameSpeaker); err != nil {
				return err
			}
		}
		out = append(out, dl)
		return nil
	})
	return out, err
}
