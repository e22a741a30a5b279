package datasets

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// A team's own dialogues (an experiment's data.files) are read from files in one of four formats, chosen by
// the name:
//   - *.jsonl (or .ndjson), one record a line: the unified format `convrep data convert` writes (WriteJSONL),
//     or a chat record, one dialogue with its list of messages (files_chat_json.go);
//   - *.json, one JSON array of such records (a ShareGPT dump), read an element at a time;
//   - *.csv and *.tsv, a header row and then one row per turn (Columns);
//   - *.parquet, as HuggingFace datasets' to_parquet writes it: one row per turn with the same columns, or
//     one row per dialogue with its messages in a list column (files_chat_parquet.go); a folder stands for
//     the .parquet shards below it.
//
// The text formats may be gzip-compressed (a .gz after the name). Every reader streams: it holds one
// dialogue at a time (a JSON record, or the rows of one dialogue), and each record, row and dialogue is
// bounded (maxRowBytes, maxLineBytes, maxDialogueBytes), so that hostile input costs no more than honest
// content of the same size.

// Bounds on what one record may hold.
const (
	// maxRowBytes bounds one CSV/TSV row, and one Parquet value.
	maxRowBytes = 4 << 20
	// maxLineBytes bounds one JSON line, or one element of a JSON array: a whole dialogue.
	maxLineBytes = 64 << 20
	// maxDialogueBytes bounds the rows of one CSV/TSV/Parquet dialogue held while it is gathered: its text,
	// and rowOverhead bytes a row.
	maxDialogueBytes = 64 << 20
	rowOverhead      = 64
)

// Columns name the columns of a CSV, TSV or Parquet file of turns, one row per turn, and the fields of a
// dialogue record (a chat record of JSONL, JSON or Parquet). An empty name takes the default
// (DefaultColumns). In a file of turns the dialogue, speaker and text columns must be there; the turn and
// domain columns are optional when left to their defaults (no turn column: the rows of a dialogue are in
// file order; no domain column: no domain), and required when named. A dialogue record's fields are
// chatColumns'.
type Columns struct {
	Dialogue string // the dialogue's id: the rows of one dialogue must be consecutive
	Turn     string // the turn's order within its dialogue, an integer
	Speaker  string // who spoke, mapped to user or system by Speakers; in a record, the field of a message
	Text     string // what was said; in a record, the field of a message
	Domain   string // the dialogue's domain (its first non-empty value)
	// Messages is a dialogue record's list of messages: objects with a speaker and a text field, strings
	// whose speakers alternate (FirstSpeaker), or an object of two parallel lists, speakers and texts.
	// Left empty, a record's "messages" (role/content) or "conversations" (from/value) is found by its key.
	Messages string `json:",omitempty"`
	// FirstSpeaker is "user" or "system": the side of the first string of a list of strings.
	FirstSpeaker string `json:",omitempty"`
}

// DefaultColumns are the column names used where Columns leaves one empty.
var DefaultColumns = Columns{Dialogue: "dialogue_id", Turn: "turn", Speaker: "speaker", Text: "text", Domain: "domain"}

// Speakers map the speaker column's values, and a message's role, to User and System, compared without
// regard to case or surrounding space; the turns of a label in Drop are dropped and counted. An empty list
// takes the default: DefaultSpeakers' for files of turns, ChatSpeakers' for dialogue records. A value in
// no list is a malformed row or record.
type Speakers struct {
	User, System []string
	Drop         []string `json:",omitempty"`
}

// DefaultSpeakers are the labels of files of turns (CSV, TSV, Parquet a row per turn) where Speakers
// leaves a list empty; nothing is dropped.
var DefaultSpeakers = Speakers{
	User:   []string{"user", "customer", "client", "human", "usr"},
	System: []string{"system", "agent", "assistant", "bot", "sys"},
}

// ChatSpeakers are the labels of dialogue records (chat JSONL, JSON and Parquet) where Speakers leaves a
// list empty. In chat data "system" (and "developer") is the prompt that instructs the assistant, not a
// turn, and "tool", "function" and "ipython" are machine output: they are dropped. The assistant is
// convrep's system side.
var ChatSpeakers = Speakers{
	User:   []string{"user", "human"},
	System: []string{"assistant", "gpt", "bot", "model", "chatbot"},
	Drop:   []string{"system", "developer", "tool", "function", "ipython"},
}

// FileSet is a set of dialogue files (data.files) and how to read their rows.
type FileSet struct {
	// Paths are the files, and folders of Parquet shards, as they are opened, in reading order.
	Paths    []string
	Columns  Columns
	Speakers Speakers
}

// normalized fills the defaults in.
func (s FileSet) normalized() FileSet {
	c := &s.Columns
	def := DefaultColumns
	for _, p := range []struct {
		v *string
		d string
	}{
		{&c.Dialogue, def.Dialogue}, {&c.Turn, def.Turn}, {&c.Speaker, def.Speaker}, {&c.Text, def.Text}, {&c.Domain, def.Domain},
		{&c.Messages, ""},
	} {
		*p.v = strings.TrimSpace(*p.v)
		if *p.v == "" {
			*p.v = p.d
		}
	}
	if len(s.Speakers.User) == 0 {
		s.Speakers.User = DefaultSpeakers.User
	}
	if len(s.Speakers.System) == 0 {
		s.Speakers.System = DefaultSpeakers.System
	}
	c.FirstSpeaker = strings.ToLower(strings.TrimSpace(c.FirstSpeaker))
	s.Speakers.User, s.Speakers.System = normLabels(s.Speakers.User), normLabels(s.Speakers.System)
	if len(s.Speakers.Drop) > 0 {
		s.Speakers.Drop = normLabels(s.Speakers.Drop)
	}
	return s
}

// Validate checks what needs no disk: at least one path, none empty or twice, distinct column names, a
// first speaker of user or system, and speaker labels that are not empty and not in two lists.
func (s FileSet) Validate() error {
	if len(s.Paths) == 0 {
		return fmt.Errorf("no files")
	}
	for i, p := range s.Paths {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("file %d is an empty path", i+1)
		}
		if slices.Contains(s.Paths[:i], p) {
			return fmt.Errorf("%s is listed twice", p)
		}
	}
	n := s.normalized()
	c := n.Columns
	names := map[string]string{}
	for _, p := range [][2]string{{"dialogue", c.Dialogue}, {"turn", c.Turn}, {"speaker", c.Speaker}, {"text", c.Text}, {"domain", c.Domain}, {"messages", c.Messages}} {
		if p[1] == "" {
			continue
		}
		if other, ok := names[p[1]]; ok {
			return fmt.Errorf("columns %s and %s are both %q", other, p[0], p[1])
		}
		names[p[1]] = p[0]
	}
	if f := c.FirstSpeaker; f != "" && f != string(User) && f != string(System) {
		return fmt.Errorf("first_speaker %q is neither user nor system", f)
	}
	for _, l := range slices.Concat(n.Speakers.User, n.Speakers.System, n.Speakers.Drop) {
		if l == "" {
			return fmt.Errorf("an empty speaker label")
		}
	}
	for _, l := range n.Speakers.User {
		if slices.Contains(n.Speakers.System, l) {
			return fmt.Errorf("speaker %q is both a user and a system speaker", l)
		}
	}
	for _, l := range n.Speakers.Drop {
		if slices.Contains(normLabels(s.Speakers.User), l) || slices.Contains(normLabels(s.Speakers.System), l) {
			return fmt.Errorf("speaker %q is both dropped and a user or system speaker", l)
		}
	}
	return nil
}

// fileFormat is how a file is read.
type fileFormat int

const (
	formatJSONL fileFormat = iota + 1
	formatJSON
	formatCSV
	formatTSV
	formatParquet
)

func (f fileFormat) String() string {
	return map[fileFormat]string{formatJSONL: "jsonl", formatJSON: "json", formatCSV: "csv", formatTSV: "tsv", formatParquet: "parquet"}[f]
}

// formatOf is the format a file's name says.
func formatOf(path string) (fileFormat, error) {
	name := strings.ToLower(filepath.Base(path))
	gz := strings.HasSuffix(name, ".gz")
	name = strings.TrimSuffix(name, ".gz")
	switch ext := filepath.Ext(name); {
	case ext == ".jsonl" || ext == ".ndjson":
		return formatJSONL, nil
	case ext == ".json":
		return formatJSON, nil
	case ext == ".csv":
		return formatCSV, nil
	case ext == ".tsv":
		return formatTSV, nil
	case ext == ".parquet" && !gz:
		return formatParquet, nil
	case ext == ".parquet":
		return 0, fmt.Errorf("%s: a Parquet file compresses its own pages; give it without .gz", path)
	}
	return 0, fmt.Errorf("%s: unknown format: the name must end in .jsonl, .ndjson, .json, .csv, .tsv (each optionally .gz) or .parquet, or name a folder of .parquet files", path)
}

// dialogueFile is one file to read: its path, format, the corpus name its dialogues take, and the path of
// the set it stands for (a folder's, for a shard).
type dialogueFile struct {
	path   string
	format fileFormat
	corpus string
	given  string
}

// files lists what the set reads, in order: each path named, a folder as its .parquet files at any depth in
// path order (names starting with "." or "_", such as Spark's _SUCCESS, are passed over).
func (s FileSet) files() ([]dialogueFile, error) {
	var out []dialogueFile
	for _, p := range s.Paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			f, err := formatOf(p)
			if err != nil {
				return nil, err
			}
			out = append(out, dialogueFile{path: p, format: f, corpus: baseNoExt(p), given: p})
			continue
		}
		corpus := filepath.Base(filepath.Clean(p))
		n := 0
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if path != p && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !strings.EqualFold(filepath.Ext(name), ".parquet") {
				return nil
			}
			n++
			out = append(out, dialogueFile{path: path, format: formatParquet, corpus: corpus, given: p})
			return nil
		})
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("folder %s holds no .parquet file", p)
		}
	}
	return out, nil
}

// List returns the files the set reads, in order (a folder's Parquet shards each), after Check: each exists,
// has a known format, and holds the columns named.
func (s FileSet) List() ([]string, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	fs, err := s.files()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.path
	}
	return out, nil
}

// Check does what List does, and reads each CSV or TSV file's header row and each Parquet file's schema to
// see that the columns the set names are there; it reads no row, so that a wrong mapping fails before any
// work.
func (s FileSet) Check() error {
	if err := s.Validate(); err != nil {
		return err
	}
	files, err := s.files()
	if err != nil {
		return err
	}
	for _, f := range files {
		switch f.format {
		case formatCSV, formatTSV:
			err = readFile(f.path, func(r io.Reader) error {
				_, _, _, err := openTurnTable(f.path, r, f.format == formatTSV, s.Columns)
				return err
			})
		case formatParquet:
			err = checkParquetColumns(f.path, s.Columns)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// EachDialogue reads the set's files in order, streaming, and hands each dialogue to fn with the path of
// the set it came from (a folder's for its shards). A unified JSON line's dialogue keeps its corpus; the
// others take the file's name without extensions as their corpus ("support" for support.csv.gz, a
// folder's name for its shards). A dialogue's turns go through the corpora's cleaning and, with
// opt.MergeSameSpeaker, merging; the key corpus/id must be unique over the set. Malformed records fail the
// read, naming the file and the line or row, or under opt.SkipBad are listed and counted in the log per file
// and skipped with their dialogue. Under opt.SkipBad a dialogue whose key comes back (its rows are not
// consecutive, or its id is in two records) is skipped whole, every part of it: a first pass over the files
// finds those keys (scattered), so the files are read twice. Each file's FileReport is logged, and handed to
// opt.FileRead.
func (s FileSet) EachDialogue(opt ReadOptions, fn func(file string, d Dialogue) error) error {
	if err := s.Validate(); err != nil {
		return err
	}
	files, err := s.files()
	if err != nil {
		return err
	}
	var scattered keySet
	if opt.SkipBad {
		if scattered, err = s.scattered(files, opt.MergeSameSpeaker); err != nil {
			return err
		}
	}
	seen := newKeySet()
	for _, f := range files {
		src := newSource(f.corpus, f.path, opt)
		n := 0
		emit := func(place string, d Dialogue) error {
			if scattered.has(d.Corpus, d.ID) {
				return src.bad(place, fmt.Errorf("dialogue %q of corpus %s comes back after other dialogues (a CSV, TSV or Parquet dialogue's rows must be consecutive, and an id is unique over the files): skipped whole, here and wherever else it appears", d.ID, d.Corpus))
			}
			if !seen.add(d.Corpus, d.ID) {
				return src.bad(place, fmt.Errorf("dialogue %q of corpus %s appears again: a dialogue's id is unique over the files, and a CSV, TSV or Parquet dialogue's rows must be consecutive", d.ID, d.Corpus))
			}
			n++
			return fn(f.given, d)
		}
		err := s.readOne(f, src, opt.MergeSameSpeaker, emit)
		src.finish()
		if err != nil {
			return err
		}
		rep := FileReport{File: f.path, Given: f.given, Shape: src.shape, Dialogues: n, Dropped: src.dropped, Skipped: src.skipped}
		if len(rep.Dropped.Roles) > 0 || rep.Dropped.ToolCalls+rep.Dropped.Empty+rep.Dropped.Parts > 0 {
			opt.logger().Info("dropped messages", zap.String("file", f.path), zap.String("read", rep.Summary()))
		}
		if opt.FileRead != nil {
			opt.FileRead(rep)
		}
	}
	return nil
}

// readOne reads file f of the set through src, handing each good dialogue to emit with its place.
func (s FileSet) readOne(f dialogueFile, src *source, merge bool, emit func(place string, d Dialogue) error) error {
	raw := s.Columns // the readers tell a default column from a named one
	rows, chat := s.speakerMap(false), s.speakerMap(true)
	records := func() *jsonRecords {
		return &jsonRecords{src: src, cols: raw, sp: chat, merge: merge, emit: emit, base: baseNoExt(f.path)}
	}
	switch f.format {
	case formatJSONL:
		return readFile(f.path, func(r io.Reader) error { return readRecordLines(records(), r) })
	case formatJSON:
		return readFile(f.path, func(r io.Reader) error { return readRecordArray(records(), r) })
	case formatCSV, formatTSV:
		src.shape = "rows, one per turn"
		return readFile(f.path, func(r io.Reader) error {
			return readTurnTable(src, r, f.format == formatTSV, raw, rows, merge, emit)
		})
	case formatParquet:
		return readParquet(src, f.path, raw, rows, chat, merge, emit)
	}
	return fmt.Errorf("%s: no reader for format %v", f.path, f.format)
}

// scattered is the first pass of a read under SkipBad: the keys of the dialogues that come back, whose rows
// in a file of turns make more than one run of consecutive rows (a run whose rows are malformed counts), or
// whose id is in more than one dialogue record, over all the files. It holds a 16-byte digest and a count per
// dialogue, and nothing of their text; a structural error (a missing column) is the read's error.
func (s FileSet) scattered(files []dialogueFile, merge bool) (keySet, error) {
	counts := map[[16]byte]uint8{}
	note := func(corpus, id string) {
		if k := keyOf(corpus, id); counts[k] < 2 {
			counts[k]++
		}
	}
	quiet := ReadOptions{SkipBad: true}
	for _, f := range files {
		src := newSource(f.corpus, f.path, quiet)
		src.runs = func(id string) { note(src.corpus, id) }
		emit := func(_ string, d Dialogue) error {
			if !src.byRows { // a record: the rows' runs were noted as they began
				note(d.Corpus, d.ID)
			}
			return nil
		}
		if err := s.readOne(f, src, merge, emit); err != nil {
			return nil, err
		}
	}
	out := keySet{}
	for k, n := range counts {
		if n > 1 {
			out[k] = struct{}{}
		}
	}
	return out, nil
}

// ReadFiles reads every dialogue of the set into memory, in order (EachDialogue).
func ReadFiles(s FileSet, opt ReadOptions) ([]Dialogue, error) {
	var ds []Dialogue
	err := s.EachDialogue(opt, func(_ string, d Dialogue) error {
		ds = append(ds, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	opt.logger().Info("read files", zap.Strings("files", s.Paths), zap.Int("dialogues", len(ds)))
	return ds, nil
}

// keySet remembers the corpus/id keys seen, as 128-bit digests: a million dialogues take about 40 MB
// whatever their ids' length.
type keySet map[[16]byte]struct{}

func newKeySet() keySet { return keySet{} }

// keyOf is the digest of corpus/id.
func keyOf(corpus, id string) [16]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s/%s", len(corpus), corpus, id)
	var key [16]byte
	copy(key[:], h.Sum(nil))
	return key
}

// add records corpus/id and reports whether it was new.
func (k keySet) add(corpus, id string) bool {
	key := keyOf(corpus, id)
	if _, ok := k[key]; ok {
		return false
	}
	k[key] = struct{}{}
	return true
}

// has reports whether corpus/id is in k (a nil k holds nothing).
func (k keySet) has(corpus, id string) bool {
	if k == nil {
		return false
	}
	_, ok := k[keyOf(corpus, id)]
	return ok
}

// speakerMap maps a speaker label to User or System, or drops it.
type speakerMap struct {
	labels             map[string]Speaker
	drop               map[string]bool
	names              map[string]string // every label, to itself
	user, system, gone []string
}

// speakerMap is the mapping of the set's files of turns (chat false: DefaultSpeakers where a list is left
// empty) or of its dialogue records (chat true: ChatSpeakers). A default drop list leaves out the labels
// that a list that is set maps.
func (s FileSet) speakerMap(chat bool) speakerMap {
	def := DefaultSpeakers
	if chat {
		def = ChatSpeakers
	}
	gone := normLabels(s.Speakers.Drop)
	// A list left to its default gives way to a drop list that is set (Validate refuses a label both in a
	// list that is set and dropped).
	or := func(given, d []string) []string {
		if len(given) > 0 {
			return normLabels(given)
		}
		var out []string
		for _, l := range d {
			if !slices.Contains(gone, l) {
				out = append(out, l)
			}
		}
		return out
	}
	m := speakerMap{labels: map[string]Speaker{}, drop: map[string]bool{},
		user: or(s.Speakers.User, def.User), system: or(s.Speakers.System, def.System), gone: gone}
	for _, l := range m.user {
		m.labels[l] = User
	}
	for _, l := range m.system {
		m.labels[l] = System
	}
	if len(m.gone) == 0 {
		for _, l := range def.Drop {
			if _, mapped := m.labels[l]; !mapped {
				m.gone = append(m.gone, l)
			}
		}
	}
	for _, l := range m.gone {
		m.drop[l] = true
	}
	m.names = map[string]string{}
	for _, l := range slices.Concat(m.user, m.system, m.gone) {
		m.names[l] = l
	}
	return m
}

// known is b as the label string of a list it is in as it is (no copy), or false.
func (m speakerMap) known(b []byte) (string, bool) {
	l, ok := m.names[string(b)]
	return l, ok
}

// of maps label: its side, or dropped; ok is false for a label in no list.
func (m speakerMap) of(label string) (sp Speaker, dropped, ok bool) {
	l := strings.ToLower(strings.TrimSpace(label))
	if sp, ok := m.labels[l]; ok {
		return sp, false, true
	}
	if m.drop[l] {
		return "", true, true
	}
	return "", false, false
}

// unknown is the error of a label in no list; what names it ("speaker", "message 3: role").
func (m speakerMap) unknown(what, label string) error {
	msg := fmt.Sprintf("%s %q is neither a user speaker (%s) nor a system speaker (%s)",
		what, clip(label), strings.Join(m.user, ", "), strings.Join(m.system, ", "))
	if len(m.gone) > 0 {
		msg += fmt.Sprintf(" nor dropped (%s)", strings.Join(m.gone, ", "))
	}
	return errors.New(msg)
}

// normLabels is labels as they are compared: lower case, trimmed.
func normLabels(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = strings.ToLower(strings.TrimSpace(l))
	}
	return out
}

// clip shortens a value quoted in an error.
func clip(s string) string {
	const n = 60
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
