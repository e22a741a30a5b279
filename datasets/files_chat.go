package datasets

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A dialogue record holds one dialogue with its list of messages, as chat data is kept: a JSON line or an
// element of a JSON array (files_chat_json.go), or a Parquet row (files_chat_parquet.go). Its messages come
// in one of three layouts (listKind), and every reader hands them, one at a time, to chatTurns, which maps
// their speakers (ChatSpeakers), drops and counts what is not a turn, and builds the Dialogue.

// listKind is how a record's messages are laid out.
type listKind int

const (
	listOfMessages listKind = iota + 1 // a list of objects, each with a speaker and a text field
	listOfStrings                      // a list of texts whose speakers alternate, from Columns.FirstSpeaker
	parallelLists                      // an object of two lists of one length: speakers and texts
)

// recordFields are the field names a file's records are read by.
type recordFields struct {
	list, speaker, text  string // the list of messages, and the speaker and text fields (or lists)
	id, domain           string // the record's id and domain fields
	idNamed, domainNamed bool   // named in Columns, and so required
}

// recordFieldsFor are the fields of records whose list is list (a key found, or Columns.Messages): a
// speaker and text field named in cols, or else the list's known pair (messages: role/content,
// conversations: from/value), or else Columns' defaults (speaker/text). The id is Columns.Dialogue when
// named, else "id" where a record has it; the domain Columns.Domain when named, else "domain".
func recordFieldsFor(list string, cols Columns) recordFields {
	f := recordFields{list: list, speaker: DefaultColumns.Speaker, text: DefaultColumns.Text, id: "id", domain: DefaultColumns.Domain}
	if strings.TrimSpace(cols.Messages) == "" {
		switch list {
		case "messages":
			f.speaker, f.text = "role", "content"
		case "conversations":
			f.speaker, f.text = "from", "value"
		}
	}
	if s := strings.TrimSpace(cols.Speaker); s != "" {
		f.speaker = s
	}
	if s := strings.TrimSpace(cols.Text); s != "" {
		f.text = s
	}
	if s := strings.TrimSpace(cols.Dialogue); s != "" {
		f.id, f.idNamed = s, true
	}
	if s := strings.TrimSpace(cols.Domain); s != "" {
		f.domain, f.domainNamed = s, true
	}
	return f
}

// shapeName names a layout for data check: "chat messages (role/content)".
func (f recordFields) shapeName(kind listKind, first string) string {
	switch {
	case kind == listOfStrings:
		return fmt.Sprintf("dialogue records, %q a list of strings, speakers alternating from the %s", f.list, first)
	case kind == parallelLists:
		return fmt.Sprintf("dialogue records, %q parallel lists (%s/%s)", f.list, f.speaker, f.text)
	case f.list == "messages" && f.speaker == "role" && f.text == "content":
		return "chat messages (role/content)"
	case f.list == "conversations" && f.speaker == "from" && f.text == "value":
		return "ShareGPT conversations (from/value)"
	}
	return fmt.Sprintf("dialogue records, %q messages (%s/%s)", f.list, f.speaker, f.text)
}

// Dropped counts what the reading of a file left out of its dialogues.
type Dropped struct {
	// Roles counts the messages (or rows) dropped for their speaker label (Speakers.Drop), lower-cased.
	Roles map[string]int
	// ToolCalls are assistant messages without text that only call a tool; Empty are messages without
	// text otherwise; Parts are content parts that are not text (an image).
	ToolCalls, Empty, Parts int
}

func (d *Dropped) add(o Dropped) {
	for r, n := range o.Roles {
		d.role(r, n)
	}
	d.ToolCalls += o.ToolCalls
	d.Empty += o.Empty
	d.Parts += o.Parts
}

func (d *Dropped) role(label string, n int) {
	if d.Roles == nil {
		d.Roles = map[string]int{}
	}
	d.Roles[label] += n
}

// FileReport is what reading one file found: the layout of its records, its dialogues, and what was
// dropped or skipped.
type FileReport struct {
	File      string // the file read
	Given     string // the path of the set it stands for (a folder's, for a shard)
	Shape     string // "chat messages (role/content)", "rows, one per turn", ...
	Dialogues int
	Dropped   Dropped
	Skipped   int // malformed records skipped (ReadOptions.SkipBad)
}

// Merge adds o's counts to r (the shards of one folder); the shape is r's, or o's where r has none.
func (r FileReport) Merge(o FileReport) FileReport {
	if r.Shape == "" {
		r.Shape = o.Shape
	} else if o.Shape != "" && o.Shape != r.Shape && !strings.Contains(r.Shape, o.Shape) {
		r.Shape += "; " + o.Shape
	}
	r.Dialogues += o.Dialogues
	r.Skipped += o.Skipped
	r.Dropped.add(o.Dropped)
	return r
}

// Summary is the report in a line: "chat messages (role/content), 1 system prompt dropped per dialogue".
func (r FileReport) Summary() string {
	parts := []string{r.Shape}
	count := func(n int, one, many string) string {
		if r.Dialogues > 0 && n%r.Dialogues == 0 {
			k := n / r.Dialogues
			if k == 1 {
				return fmt.Sprintf("1 %s dropped per dialogue", one)
			}
			return fmt.Sprintf("%d %s dropped per dialogue", k, many)
		}
		if n == 1 {
			return fmt.Sprintf("1 %s dropped", one)
		}
		return fmt.Sprintf("%d %s dropped", n, many)
	}
	for _, role := range slices.Sorted(maps.Keys(r.Dropped.Roles)) {
		one := role + " message"
		if role == "system" || role == "developer" {
			one = role + " prompt"
		}
		parts = append(parts, count(r.Dropped.Roles[role], one, one+"s"))
	}
	for _, c := range []struct {
		n         int
		one, many string
	}{
		{r.Dropped.ToolCalls, "tool call without text", "tool calls without text"},
		{r.Dropped.Empty, "empty message", "empty messages"},
		{r.Dropped.Parts, "non-text content part", "non-text content parts"},
	} {
		if c.n > 0 {
			parts = append(parts, count(c.n, c.one, c.many))
		}
	}
	if r.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d malformed records skipped", r.Skipped))
	}
	return strings.Join(parts, ", ")
}

// chatTurns builds one record's dialogue from its messages, given in order: a speaker is mapped by sp, a
// message of a dropped speaker, without text, or calling a tool is counted and left out, and the text is
// cleaned (and merged) as every reader's is. The messages' text is bounded by maxDialogueBytes.
type chatTurns struct {
	sp      speakerMap
	merge   bool
	noun    string // what a speaker is called in errors: "role", "from", "speaker"
	d       Dialogue
	dropped Dropped
	bytes   int
}

func newChatTurns(sp speakerMap, merge bool, speakerField string) *chatTurns {
	return &chatTurns{sp: sp, merge: merge, noun: speakerField}
}

// reset starts the next record.
func (c *chatTurns) reset() {
	c.d, c.dropped, c.bytes = Dialogue{}, Dropped{}, 0
}

// message adds message i: its speaker label (hasSpeaker false: none, or null), its text (hasText false:
// none, or null), whether it calls a tool, and how many content parts that are not text it had.
func (c *chatTurns) message(i int, speaker string, hasSpeaker bool, text string, hasText, toolCall bool, otherParts int) error {
	if !hasSpeaker {
		return fmt.Errorf("message %d: no %s", i, c.noun)
	}
	sp, drop, ok := c.sp.of(speaker)
	if !ok {
		return c.sp.unknown(fmt.Sprintf("message %d: %s", i, c.noun), speaker)
	}
	c.bytes += len(text) + rowOverhead
	if c.bytes > maxDialogueBytes {
		return fmt.Errorf("message %d: the dialogue's messages hold more than %d MiB", i, maxDialogueBytes>>20)
	}
	c.dropped.Parts += otherParts
	switch {
	case drop:
		c.dropped.role(strings.ToLower(strings.TrimSpace(speaker)), 1)
	case strings.TrimSpace(text) == "" && toolCall:
		c.dropped.ToolCalls++
	case strings.TrimSpace(text) == "" || !hasText:
		c.dropped.Empty++
	default:
		c.d.Turns = addTurn(c.d.Turns, sp, text, c.merge)
	}
	return nil
}

// alternating adds a list of strings' message i, whose side alternates from first.
func (c *chatTurns) alternating(i int, first Speaker, text string, hasText bool) error {
	sp := first
	if i%2 == 1 {
		sp = map[Speaker]Speaker{User: System, System: User}[first]
	}
	c.bytes += len(text) + rowOverhead
	if c.bytes > maxDialogueBytes {
		return fmt.Errorf("message %d: the dialogue's messages hold more than %d MiB", i, maxDialogueBytes>>20)
	}
	if !hasText || strings.TrimSpace(text) == "" {
		c.dropped.Empty++
		return nil
	}
	c.d.Turns = addTurn(c.d.Turns, sp, text, c.merge)
	return nil
}

// recordID is a record's id: its own, or else the file's base name and the record's place (a line
// number, an element or row index), as "chats:12".
func recordID(own string, hasOwn bool, base string, pos int64) string {
	if hasOwn {
		return own
	}
	return fmt.Sprintf("%s:%d", base, pos)
}
