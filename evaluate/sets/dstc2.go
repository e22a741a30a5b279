package sets

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// DSTC2 as shipped in eval/dstc2: the dialogues of ToDDAPT's data_ptm/dstc2/data.zip (data.json, the unified
// format; splits train/val/test of 1612/506/1117 dialogues, user turns taken from the transcriptions, no
// acts, and no system welcome turn: every dialogue starts with the user) and the act-to-utterance pairs of
// lajanugen/nlg_dstc2 (src/data/{train,valid,test}_data, blocks of four lines: the acts with values, the
// acts with slot names only, e.g. "inform(area) offer(name)", the system utterance, a blank line).
//
// A system turn's acts are recovered by text: its utterance and every pair's utterance are normalised by
// dstc2Key (lower-cased, every character that is neither a letter nor a digit made a space, runs of space
// collapsed, ends trimmed), and the turn takes the act types (the names before "(" on the second line) of
// the pairs with the same key, pooled over the three pair files (the pairs are a lookup table here, not a
// split). A key whose pairs disagree on the set of act types is ambiguous and labels nothing; a turn with no
// matching pair stays unlabelled. Both counts go into the notes.

// ReadDSTC2 reads the DSTC2 dialogue act set from dir (.../eval/dstc2).
func ReadDSTC2(dir string) (*ActSet, error) {
	table, err := readDSTC2Pairs(dir)
	if err != nil {
		return nil, err
	}
	zipPath := filepath.Join(dir, "data_ptm", "dstc2", "data.zip")
	var raw []unifiedDialogue
	if err := readZipJSON(zipPath, "data.json", &raw); err != nil {
		return nil, err
	}
	where := zipPath + ": member data.json"
	bySplit := map[string][]actDialogue{}
	noMatch, ambiguous := 0, 0
	unmatchedTexts := map[string]bool{}
	for i := range raw {
		d, err := raw[i].actDialogue(where, false)
		if err != nil {
			return nil, err
		}
		if _, ok := dstc2Splits[raw[i].DataSplit]; !ok {
			return nil, fmt.Errorf("%s: dialogue %d (%s): data_split %q, want train, val or test", where, i, raw[i].DialogueID, raw[i].DataSplit)
		}
		for j := range d.Turns {
			t := &d.Turns[j]
			if !t.System {
				continue
			}
			e, ok := table[dstc2Key(t.Text)]
			switch {
			case !ok:
				noMatch++
				unmatchedTexts[t.Text] = true
			case e.ambiguous:
				ambiguous++
			default:
				t.Labels = e.labels
			}
		}
		bySplit[raw[i].DataSplit] = append(bySplit[raw[i].DataSplit], d)
	}
	set := &ActSet{Dataset: "dstc2"}
	var counts []string
	var total actCount
	for _, sp := range []struct {
		name string
		dst  *[]ActExample
	}{{"train", &set.Train}, {"val", &set.Val}, {"test", &set.Test}} {
		if len(bySplit[sp.name]) == 0 {
			return nil, fmt.Errorf("%s: no dialogue of split %s", where, sp.name)
		}
		ex, c := actExamples(bySplit[sp.name])
		*sp.dst = ex
		counts = append(counts, countNote(sp.name, c))
		total.System += c.System
		total.Labelled += c.Labelled
	}
	set.Labels = labelVocab(set.Train, set.Val, set.Test)
	set.Notes = []string{
		fmt.Sprintf("DSTC2: %s of %s system turns labelled (%s) from the act-to-utterance pairs of src/data/{train,valid,test}_data, "+
			"matched by text after normalisation (lower-case, non-alphanumerics to spaces, whitespace collapsed)",
			thousands(total.Labelled), thousands(total.System), strings.Join(counts, ", ")),
		fmt.Sprintf("DSTC2: %s system turns (%s distinct texts) match no pair and %s match pairs that disagree on act types; they are not examples",
			thousands(noMatch), thousands(len(unmatchedTexts)), thousands(ambiguous)),
		"DSTC2: labels are DSTC2's own system act types; TOD-BERT used Paul et al. (2019)'s universal acts, which are not public",
	}
	return set, nil
}

// dstc2Splits are the data_split values of the unified data.json.
var dstc2Splits = map[string]bool{"train": true, "val": true, "test": true}

// dstc2Entry is what the pairs say about one normalised utterance.
type dstc2Entry struct {
	labels    []string
	ambiguous bool
}

// readDSTC2Pairs reads the three pair files of src/data into a table from dstc2Key to act types.
func readDSTC2Pairs(dir string) (map[string]dstc2Entry, error) {
	table := map[string]dstc2Entry{}
	for _, name := range []string{"train_data", "valid_data", "test_data"} {
		path := filepath.Join(dir, "src", "data", name)
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read dstc2 pairs: %w", err)
		}
		pairs, err := parseDSTC2Pairs(path, string(raw))
		if err != nil {
			return nil, err
		}
		for _, p := range pairs {
			key := dstc2Key(p.text)
			e, seen := table[key]
			switch {
			case !seen:
				table[key] = dstc2Entry{labels: p.labels}
			case !e.ambiguous && strings.Join(e.labels, " ") != strings.Join(p.labels, " "):
				table[key] = dstc2Entry{ambiguous: true}
			}
		}
	}
	return table, nil
}

// dstc2Pair is one block of a pair file: the act types of its second line and its utterance.
type dstc2Pair struct {
	labels []string
	text   string
}

// parseDSTC2Pairs parses the four-line blocks of one pair file; errors name the file, block and line.
func parseDSTC2Pairs(path, raw string) ([]dstc2Pair, error) {
	lines := strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("read %s: no pairs", path)
	}
	if len(lines)%4 != 0 {
		return nil, fmt.Errorf("read %s: %d lines, want blocks of 4 (acts, act types, utterance, blank)", path, len(lines))
	}
	out := make([]dstc2Pair, 0, len(lines)/4)
	for b := 0; b < len(lines); b += 4 {
		at := func(k int) string { return fmt.Sprintf("read %s: pair %d (line %d)", path, b/4, b+k+1) }
		if strings.TrimSpace(lines[b+3]) != "" {
			return nil, fmt.Errorf("%s: want a blank line, got %q", at(3), lines[b+3])
		}
		text := strings.TrimSpace(lines[b+2])
		if text == "" {
			return nil, fmt.Errorf("%s: the utterance is empty", at(2))
		}
		var types []string
		for _, tok := range strings.Fields(lines[b+1]) {
			open := strings.IndexByte(tok, '(')
			if open < 1 || !strings.HasSuffix(tok, ")") {
				return nil, fmt.Errorf("%s: act %q, want type(slots)", at(1), tok)
			}
			types = append(types, tok[:open])
		}
		if len(types) == 0 {
			return nil, fmt.Errorf("%s: no act", at(1))
		}
		out = append(out, dstc2Pair{labels: sortedSet(types), text: text})
	}
	return out, nil
}

// dstc2Key normalises an utterance for matching: lower-case, non-alphanumerics to spaces, spaces collapsed.
func dstc2Key(s string) string {
	mapped := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return ' '
	}, s)
	return strings.Join(strings.Fields(mapped), " ")
}
