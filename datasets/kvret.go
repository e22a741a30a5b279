package datasets

import (
	"fmt"
	"io"
	"path/filepath"
)

// KVRET (the Stanford Multi-Domain dialogues, Eric et al. 2017) upstream: kvret_{train,dev,test}_public.json
// in ToDDAPT's data_ptm/smd/original_data.zip (data_ptm/kvret/ in later commits). Each is a JSON array of
// {dialogue: [{turn: driver|assistant, data: {utterance}}], scenario: {uuid, task: {intent}}}.

var kvretZips = []string{"data_ptm/smd/original_data.zip", "data_ptm/kvret/original_data.zip"}

var kvretMembers = []string{"kvret_train_public.json", "kvret_dev_public.json", "kvret_test_public.json"}

func kvretFiles(root string) ([]string, error) {
	for _, z := range kvretZips {
		if zs := existing(filepath.Join(root, z)); len(zs) > 0 {
			return zs, nil
		}
	}
	return nil, fmt.Errorf("no %s in %s", kvretZips[0], root)
}

func readKVRET(root string, opt ReadOptions) ([]Dialogue, error) {
	files, err := kvretFiles(root)
	if err != nil {
		return nil, err
	}
	return readZipMembers("kvret", files[0], kvretMembers, opt, parseKVRET)
}

type kvretDialogue struct {
	Turns *[]struct {
		Turn *string `json:"turn"`
		Data *struct {
			Utterance *string `json:"utterance"`
		} `json:"data"`
	} `json:"dialogue"`
	Scenario *struct {
		UUID *string `json:"uuid"`
		Task *struct {
			Intent *string `json:"intent"`
		} `json:"task"`
	} `json:"scenario"`
}

func (d *kvretDialogue) recordID() string {
	if d.Scenario == nil {
		return ""
	}
	return deref(d.Scenario.UUID)
}

// parseKVRET parses one kvret_*_public.json; the scenario's uuid is the ID and its task intent (navigate,
// schedule, weather) the domain.
func parseKVRET(src *source, r io.Reader) ([]Dialogue, error) {
	var out []Dialogue
	err := readJSONArray(src, r, func(d *kvretDialogue) error {
		id := d.recordID()
		if id == "" {
			return missing("scenario.uuid")
		}
		if d.Turns == nil {
			return missing("dialogue")
		}
		dl := Dialogue{ID: id, Corpus: "kvret"}
		if d.Scenario.Task != nil {
			dl.Domain = domainName(deref(d.Scenario.Task.Intent))
		}
		for j, t := range *d.Turns {
			if t.Turn == nil || t.Data == nil || t.Data.Utterance == nil {
				return fmt.Errorf("turn %d: %w", j, missing("turn or data.utterance"))
			}
			sp, err := speakerOf(*t.Turn, "driver", "assistant")
			if err != nil {
				return fmt.Errorf("turn %d: %w", j, err)
			}
			dl.Turns = addTurn(dl.Turns, sp, *t.Data.Utterance, src.opt.MergeSameSpeaker)
		}
		out = append(out, dl)
		return nil
	})
	return out, err
}
