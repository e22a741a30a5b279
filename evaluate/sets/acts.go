package sets

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"convrep/evaluate"
)

// Dialogue act prediction sets (DSE Appendix B; FutureTOD §4), built the way TOD-BERT builds them (Wu et al.
// 2020; github jasonwu0731/ToD-BERT, utils/utils_multiwoz.py, utils/utils_universal_act.py,
// utils/dataloader_dm.py, utils/utils_general.py, evaluation_pipeline.sh):
//
//   - Whose acts. The system's: TOD-BERT's "sysact" task reads each turn's "sys_act", the acts of the system
//     utterance, and DSE describes the task as predicting "the appropriate system action".
//   - Input. One example per labelled system turn; History holds every turn of the dialogue up to and
//     including that system utterance, oldest first, user and system alternating as in the file, System
//     each turn's role, and Reply the user utterance that answers it (Replied false when the system turn
//     ends the dialogue). TOD-BERT's readers make one example per user turn, holding the system turn before
//     it and its acts (utils_universal_act.py read_langs_turn: turn_sys = dial_list[ti-1], turn_usr = the
//     user turn, sys_act = the system turn's label; utils_multiwoz.py read_langs_turn: turn_sys =
//     system_transcript, turn_usr = transcript, sys_act = dialog_act[turn_idx]), and its context
//     (dataloader_dm.py, Dataset_dm.concat_dh_sys_usr) is the history, the system utterance and that user
//     utterance: evaluate/finetune.Format.Act builds it from these fields. Utterances are trimmed of
//     surrounding space, as TOD-BERT's .strip().
//   - Labels. A multi-label set of act types, lower-cased, one per distinct type. For MultiWOZ the domain is
//     dropped ("Hotel-Inform" -> "inform"): TOD-BERT's --domain_act flag is off in evaluation_pipeline.sh, so
//     utils_multiwoz.py keeps key.split("-")[1].lower() (13 act types on the val and test files).
//     For DSTC2 and GSIM TOD-BERT used the files of Paul et al. (2019, "Towards Universal Dialogue Act Tagging
//     for Task-Oriented Dialogues"), mapped to a universal act schema (DSE, Appendix B.2, counts 13 and 19
//     actions); neither those files nor the mapping are public, so the datasets' own system act types are
//     used (DSTC2: 11, "offer", "expl-conf", ...; GSIM: 7, "request", "notify_success", ...). Slots and
//     values are not part of a label.
//   - Unlabelled turns. TOD-BERT drops turns with an empty system utterance (utils_general.py) but keeps a
//     system turn whose acts are missing with an all-zero target. Here a system turn without known acts is
//     not an example (its text stays in later histories): in these files a missing annotation cannot be told
//     from an empty one, and DSTC2's acts are only known where a pair matches. Notes count them.
//   - Label vocabulary. The sorted union over all splits, as TOD-BERT's act_set is built over test, dev and
//     train.

// ActExample is one dialogue act prediction example: the dialogue's turns oldest first, ending with the system
// utterance whose acts Labels holds (sorted, distinct). Histories of one dialogue share storage; they are
// capacity-limited, so appending to one copies it.
type ActExample struct {
	History []string
	Labels  []string
	// System is the role of each History turn (true: the system's); it shares storage as History does.
	System []bool
	// Reply is the user utterance that answers the labelled one, which TOD-BERT's input ends with; Replied
	// is false when the labelled utterance is the dialogue's last turn (TOD-BERT makes no example of it).
	Reply   string
	Replied bool
}

// ActSet is a dialogue act prediction set: examples per split, the sorted label vocabulary, and notes on how
// the set was built from the files (counts of labelled turns, absent splits).
type ActSet struct {
	Dataset          string
	Train, Val, Test []ActExample
	Labels           []string
	Notes            []string
}

// actTurn is one utterance of a dialogue. Labels is nil for user turns and for system turns whose acts are
// unknown.
type actTurn struct {
	System bool
	Text   string
	Labels []string
}

// actDialogue is one dialogue in file order.
type actDialogue struct {
	ID    string
	Turns []actTurn
}

// actCount counts a split's system turns and those with known acts.
type actCount struct{ System, Labelled int }

// actExamples makes one example per system turn with known acts.
func actExamples(dialogues []actDialogue) ([]ActExample, actCount) {
	var out []ActExample
	var c actCount
	for _, d := range dialogues {
		texts, roles := make([]string, len(d.Turns)), make([]bool, len(d.Turns))
		for i, t := range d.Turns {
			texts[i], roles[i] = t.Text, t.System
		}
		for i, t := range d.Turns {
			if !t.System {
				continue
			}
			c.System++
			if len(t.Labels) == 0 {
				continue
			}
			c.Labelled++
			e := ActExample{History: texts[: i+1 : i+1], System: roles[: i+1 : i+1], Labels: t.Labels}
			if i+1 < len(d.Turns) && !d.Turns[i+1].System {
				e.Reply, e.Replied = d.Turns[i+1].Text, true
			}
			out = append(out, e)
		}
	}
	return out, c
}

// sortedSet returns the distinct strings of in, sorted; nil when in is empty.
func sortedSet(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// labelVocab returns the sorted union of the examples' labels.
func labelVocab(splits ...[]ActExample) []string {
	var all []string
	for _, s := range splits {
		for _, e := range s {
			all = append(all, e.Labels...)
		}
	}
	return sortedSet(all)
}

// countNote words a split's labelled-turn count, e.g. "train 9,596 of 10,065".
func countNote(split string, c actCount) string {
	return fmt.Sprintf("%s %s of %s", split, thousands(c.Labelled), thousands(c.System))
}

// thousands writes n with comma separators.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// readZipJSON decodes the JSON member of the zip archive at path into v. Errors name the archive and member.
func readZipJSON(path, member string, v any) error {
	return withZipMember(path, member, func(r io.Reader) error {
		if err := json.NewDecoder(r).Decode(v); err != nil {
			return fmt.Errorf("read %s: member %s: %w", path, member, err)
		}
		return nil
	})
}

// withZipMember opens the named member of the zip archive at path and hands it to fn.
func withZipMember(path, member string, fn func(io.Reader) error) error {
	z, err := zip.OpenReader(path)
	var opening *fs.PathError
	if errors.As(err, &opening) {
		return err // "open PATH: ...": the path once
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		if f.Name != member {
			names = append(names, f.Name)
			continue
		}
		r, err := f.Open()
		if err != nil {
			return fmt.Errorf("read %s: member %s: %w", path, member, err)
		}
		defer r.Close()
		return fn(r)
	}
	return fmt.Errorf("read %s: no member %s (members: %s)", path, member, strings.Join(names, ", "))
}

// fewShotStream is the second PCG seed word of few-shot draws of act examples ("convact1").
const fewShotStream = 0x636f6e7661637431

// FewShot draws the n-shot training set of DSE's "10-shot and 20-shot" dialogue act prediction: up to n
// examples per label, from Train. DSE (Table 1, Appendix B.2) gives the average number of examples of these
// sets as 79 and 149 for DSTC2 and 60 and 120 for GSIM, several times n, so n counts per label, not in all
// (TOD-BERT's --nb_shots keeps nb_shots examples in all) nor dialogues (GSIM's 4.4 system turns a dialogue
// would give about 44 for 10). The rule for multi-label examples is ours: one generator per call,
// evaluate.Draw(seed, 0x636f6e7661637431, len, len), a full permutation of Train's rows; then, visiting
// rows in that order, a row is kept when at least one of its labels has fewer than n kept rows, and then
// counts for all its labels. Rows come back in draw order. A label can thus exceed n (as a co-label), and a
// label with fewer than n rows keeps them all.
func (s *ActSet) FewShot(n int, seed uint64) ([]ActExample, error) {
	train, _, err := s.fewShot(n, seed, false)
	return train, err
}

// FewShotSplits draws the few-shot training set as FewShot does and, from the rows it left, a validation
// set by the same rule (continuing over the same permutation with fresh counts), as DSE builds both its
// few-shot training and validation sets from the original training data.
func (s *ActSet) FewShotSplits(n int, seed uint64) (train, val []ActExample, err error) {
	return s.fewShot(n, seed, true)
}

func (s *ActSet) fewShot(n int, seed uint64, withVal bool) (train, val []ActExample, err error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("few-shot %s: n = %d, want at least 1", s.Dataset, n)
	}
	if len(s.Train) == 0 {
		return nil, nil, fmt.Errorf("few-shot %s: the training split is empty", s.Dataset)
	}
	order := evaluate.Draw(seed, fewShotStream, len(s.Train), len(s.Train))
	taken := make([]bool, len(s.Train))
	pick := func() []ActExample {
		count := map[string]int{}
		var out []ActExample
		for _, r := range order {
			if taken[r] {
				continue
			}
			e := s.Train[r]
			need := false
			for _, l := range e.Labels {
				need = need || count[l] < n
			}
			if !need {
				continue
			}
			taken[r] = true
			for _, l := range e.Labels {
				count[l]++
			}
			out = append(out, e)
		}
		return out
	}
	train = pick()
	if withVal {
		val = pick()
	}
	return train, val, nil
}

// unifiedDialogue is one dialogue of the unified JSON format of ToDDAPT's data_ptm archives (a list of
// dialogues; ConvLab-3's unified format): turns alternate "user" and "system", and a turn's acts are listed
// under dialogue_act.{binary,categorical,non-categorical}, each act with an "intent".
type unifiedDialogue struct {
	DataSplit  string `json:"data_split"`
	DialogueID string `json:"dialogue_id"`
	OriginalID string `json:"original_id"`
	Turns      []struct {
		Speaker     string                               `json:"speaker"`
		Utterance   string                               `json:"utterance"`
		DialogueAct map[string][]struct{ Intent string } `json:"dialogue_act"`
	} `json:"turns"`
}

// actDialogue converts d. With intents, a system turn's labels are the lower-cased intents of its
// dialogue_act; without, they are left unknown. where (the file and member) prefixes errors.
func (d *unifiedDialogue) actDialogue(where string, intents bool) (actDialogue, error) {
	out := actDialogue{ID: d.DialogueID, Turns: make([]actTurn, len(d.Turns))}
	for i, t := range d.Turns {
		var sys bool
		switch t.Speaker {
		case "system":
			sys = true
		case "user":
		default:
			return out, fmt.Errorf("%s: dialogue %s turn %d: speaker %q, want user or system", where, d.DialogueID, i, t.Speaker)
		}
		turn := actTurn{System: sys, Text: strings.TrimSpace(t.Utterance)}
		if sys && intents {
			var types []string
			for _, kind := range []string{"binary", "categorical", "non-categorical"} {
				for _, a := range t.DialogueAct[kind] {
					if a.Intent == "" {
						return out, fmt.Errorf("%s: dialogue %s turn %d: a %s act has no intent", where, d.DialogueID, i, kind)
					}
					types = append(types, strings.ToLower(a.Intent))
				}
			}
			turn.Labels = sortedSet(types)
		}
		out.Turns[i] = turn
	}
	return out, nil
}
