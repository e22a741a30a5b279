package datasets

import (
	"fmt"
	"strings"
)

// cleanText makes a turn one line of single-spaced text: runs of white space (newlines included) become one
// space, the ends are trimmed, and invalid UTF-8 becomes U+FFFD, as it would in the JSON output anyway.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Join(strings.Fields(s), " ")
}

// addTurn appends a turn after cleaning its text. An empty utterance is dropped, not an error: the corpora
// hold a few. With merge, a turn of the same speaker as the previous one is joined to it with a space.
func addTurn(ts []Turn, sp Speaker, text string, merge bool) []Turn {
	text = cleanText(text)
	if text == "" {
		return ts
	}
	if merge && len(ts) > 0 && ts[len(ts)-1].Speaker == sp {
		ts[len(ts)-1].Text += " " + text
		return ts
	}
	return append(ts, Turn{Speaker: sp, Text: text})
}

// speakerOf maps a corpus's speaker label, in any case, to User or System.
func speakerOf(label, user, system string) (Speaker, error) {
	switch {
	case strings.EqualFold(label, user):
		return User, nil
	case strings.EqualFold(label, system):
		return System, nil
	}
	return "", fmt.Errorf("speaker %q is neither %s nor %s", label, user, system)
}

// addRecord adds the corpus record j (a "turn" or an "utterance", as errors name it) whose speaker label and
// text are speaker and text, user and system being the corpus's labels: a missing one (fields names them) or
// an unknown speaker is an error; the text goes through addTurn.
func (dl *Dialogue) addRecord(unit string, j int, speaker, text *string, fields, user, system string, merge bool) error {
	if speaker == nil || text == nil {
		return fmt.Errorf("%s %d: %w", unit, j, missing(fields))
	}
	sp, err := speakerOf(*speaker, user, system)
	if err != nil {
		return fmt.Errorf("%s %d: %w", unit, j, err)
	}
	dl.Turns = addTurn(dl.Turns, sp, *text, merge)
	return nil
}

// domainName is the form every corpus's domain takes: lower case, trimmed.
func domainName(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}
