package datasets

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// SGD (Schema-Guided Dialogue, Rastogi et al. 2020) upstream: <root>/{train,dev,test}/dialogues_NNN.json,
// here gzip-compressed; each file is a JSON array of {dialogue_id, services, turns: [{speaker, utterance,
// frames}]}. schema.json describes the services and is not read.

var sgdSplits = []string{"train", "dev", "test"}

func sgdFiles(root string) ([]string, error) {
	var dirs []string
	for _, split := range sgdSplits {
		dirs = append(dirs, filepath.Join(root, split))
	}
	files, err := globJSON("dialogues_*", dirs...)
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no dialogue files in %s (want {train,dev,test}/dialogues_NNN.json[.gz])", root)
	}
	return files, err
}

func readSGD(root string, opt ReadOptions) ([]Dialogue, error) {
	files, err := sgdFiles(root)
	if err != nil {
		return nil, err
	}
	parts, err := inParallel(len(files), func(i int) ([]Dialogue, error) {
		split := filepath.Base(filepath.Dir(files[i]))
		src := newSource("sgd", files[i], opt)
		defer src.finish()
		var ds []Dialogue
		err := readFile(files[i], func(r io.Reader) (err error) {
			ds, err = parseSGD(src, split, r)
			return err
		})
		return ds, err
	})
	return concat(parts), err
}

type sgdDialogue struct {
	ID       *string    `json:"dialogue_id"`
	Services []string   `json:"services"`
	Turns    *[]sgdTurn `json:"turns"`
}

type sgdTurn struct {
	Speaker   *string `json:"speaker"`
	Utterance *string `json:"utterance"`
}

func (d *sgdDialogue) recordID() string { return deref(d.ID) }

// parseSGD parses one dialogues_NNN.json. IDs get the split as a prefix: every split numbers its dialogues
// from 1_00000.
func parseSGD(src *source, split string, r io.Reader) ([]Dialogue, error) {
	var out []Dialogue
	err := readJSONArray(src, r, func(d *sgdDialogue) error {
		if deref(d.ID) == "" {
			return missing("dialogue_id")
		}
		if d.Turns == nil {
			return missing("turns")
		}
		dl := Dialogue{ID: split + "/" + *d.ID, Corpus: "sgd", Domain: sgdDomain(d.Services)}
		for j, t := range *d.Turns {
			if err := dl.addRecord("turn", j, t.Speaker, t.Utterance, "speaker or utterance", "USER", "SYSTEM", src.opt.MergeSameSpeaker); err != nil {
				return err
			}
		}
		out = append(out, dl)
		return nil
	})
	return out, err
}

// sgdDomain names the dialogue's domains from its services ("Restaurants_1", "Hotels_2" -> "restaurants,hotels").
func sgdDomain(services []string) string {
	var doms []string
	for _, s := range services {
		if i := strings.LastIndexByte(s, '_'); i > 0 {
			s = s[:i]
		}
		if d := domainName(s); d != "" && !slices.Contains(doms, d) {
			doms = append(doms, d)
		}
	}
	return strings.Join(doms, ",")
}
