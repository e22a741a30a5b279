package sets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GSIM (Shah et al. 2018, the M2M simulated dialogues) as shipped in eval/gsim_m2m: Google's release
// (sim-M and sim-R, each {train,dev,test}.json: a list of dialogues whose turns hold the system's acts and
// utterance, absent from the first turn, then the user's utterance) and ToDDAPT's data_ptm/m2m/data.zip
// (data.json, the same dialogues in the unified format; original_id is Google's dialogue_id, data_split
// train/val/test). sim-M and sim-R are read together, as TOD-BERT's "universal_act_sim_joint" set (and DSE's
// "GSIM", 1039 test dialogues = 264 + 775) joins them: sim-M's dialogues first, then sim-R's, per split.
//
// Each (domain, split) comes from Google's file when it is present, else from data.zip (files over about
// 4 MiB are absent from this copy, so sim-R's train and test come from the archive); the notes say which.
// On sim-M, where both exist, the two give the same turns, texts and system act types. A system turn's
// labels are its acts' types, lower-cased ("REQUEST" with slot "time" -> "request").

// gsimDomain is one of GSIM's two datasets and the prefix of its dialogue ids.
type gsimDomain struct{ dir, idPrefix string }

var gsimDomains = []gsimDomain{{"sim-M", "movies_"}, {"sim-R", "restaurant_"}}

// gsimSplits pairs Google's file names with the unified data_split values.
var gsimSplits = []struct{ file, unified string }{{"train", "train"}, {"dev", "val"}, {"test", "test"}}

// ReadGSIM reads the GSIM dialogue act set (sim-M and sim-R together) from dir (.../eval/gsim_m2m).
func ReadGSIM(dir string) (*ActSet, error) {
	set := &ActSet{Dataset: "gsim"}
	var fromZip map[string][]actDialogue // by domain dir + "/" + unified split, read on first need
	zipPath := filepath.Join(dir, "data_ptm", "m2m", "data.zip")
	for si, sp := range gsimSplits {
		var dialogues []actDialogue
		for _, dom := range gsimDomains {
			path := filepath.Join(dir, dom.dir, sp.file+".json")
			ds, err := readGSIMFile(path)
			switch {
			case err == nil:
				set.Notes = append(set.Notes, fmt.Sprintf("GSIM %s %s: %d dialogues from %s/%s.json", dom.dir, sp.file, len(ds), dom.dir, sp.file))
			case errors.Is(err, fs.ErrNotExist):
				if fromZip == nil {
					if fromZip, err = readM2MZip(zipPath); err != nil {
						return nil, fmt.Errorf("read gsim: %s is absent, and its fallback: %w", path, err)
					}
				}
				ds = fromZip[dom.dir+"/"+sp.unified]
				if len(ds) == 0 {
					return nil, fmt.Errorf("read gsim: %s is absent and %s has no %s dialogue of split %s", path, zipPath, dom.dir, sp.unified)
				}
				set.Notes = append(set.Notes, fmt.Sprintf("GSIM %s %s: %d dialogues from data_ptm/m2m/data.zip (%s/%s.json absent)", dom.dir, sp.file, len(ds), dom.dir, sp.file))
			default:
				return nil, err
			}
			dialogues = append(dialogues, ds...)
		}
		ex, c := actExamples(dialogues)
		set.Notes = append(set.Notes, "GSIM: system turns labelled, "+countNote(sp.unified, c))
		switch si {
		case 0:
			set.Train = ex
		case 1:
			set.Val = ex
		default:
			set.Test = ex
		}
	}
	set.Labels = labelVocab(set.Train, set.Val, set.Test)
	set.Notes = append(set.Notes, "GSIM: labels are GSIM's own system act types; TOD-BERT used Paul et al. (2019)'s universal acts, which are not public")
	return set, nil
}

// gsimFileDialogue is one dialogue of Google's release.
type gsimFileDialogue struct {
	DialogueID string `json:"dialogue_id"`
	Turns      []struct {
		SystemActs []struct {
			Type string `json:"type"`
		} `json:"system_acts"`
		SystemUtterance *struct {
			Text string `json:"text"`
		} `json:"system_utterance"`
		UserUtterance *struct {
			Text string `json:"text"`
		} `json:"user_utterance"`
	} `json:"turns"`
}

// readGSIMFile reads one of Google's files; a missing file gives an error wrapping fs.ErrNotExist.
func readGSIMFile(path string) ([]actDialogue, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("read gsim: %w", err)
	}
	var raw []gsimFileDialogue
	if err := readJSONFile(path, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("read %s: no dialogues", path)
	}
	out := make([]actDialogue, len(raw))
	for i, d := range raw {
		out[i].ID = d.DialogueID
		for j, t := range d.Turns {
			if t.SystemUtterance != nil {
				var types []string
				for _, a := range t.SystemActs {
					if a.Type == "" {
						return nil, fmt.Errorf("read %s: dialogue %d (%s) turn %d: a system act has no type", path, i, d.DialogueID, j)
					}
					types = append(types, strings.ToLower(a.Type))
				}
				out[i].Turns = append(out[i].Turns, actTurn{System: true, Text: strings.TrimSpace(t.SystemUtterance.Text), Labels: sortedSet(types)})
			} else if len(t.SystemActs) > 0 {
				return nil, fmt.Errorf("read %s: dialogue %d (%s) turn %d: system acts without a system utterance", path, i, d.DialogueID, j)
			}
			if t.UserUtterance == nil {
				return nil, fmt.Errorf("read %s: dialogue %d (%s) turn %d: no user_utterance", path, i, d.DialogueID, j)
			}
			out[i].Turns = append(out[i].Turns, actTurn{Text: strings.TrimSpace(t.UserUtterance.Text)})
		}
	}
	return out, nil
}

// readM2MZip reads ToDDAPT's data.zip and groups its dialogues by domain dir and unified split.
func readM2MZip(zipPath string) (map[string][]actDialogue, error) {
	var raw []unifiedDialogue
	if err := readZipJSON(zipPath, "data.json", &raw); err != nil {
		return nil, err
	}
	where := zipPath + ": member data.json"
	out := map[string][]actDialogue{}
	for i := range raw {
		var dom string
		for _, g := range gsimDomains {
			if strings.HasPrefix(raw[i].OriginalID, g.idPrefix) {
				dom = g.dir
			}
		}
		if dom == "" {
			return nil, fmt.Errorf("%s: dialogue %d (%s): original_id %q is neither movies_ (sim-M) nor restaurant_ (sim-R)", where, i, raw[i].DialogueID, raw[i].OriginalID)
		}
		d, err := raw[i].actDialogue(where, true)
		if err != nil {
			return nil, err
		}
		d.ID = raw[i].OriginalID
		key := dom + "/" + raw[i].DataSplit
		out[key] = append(out[key], d)
	}
	return out, nil
}
