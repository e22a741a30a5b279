package datasets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// jsonRecords reads the JSON records of one file, a JSONL line or a JSON array's element each: convrep's
// unified dialogue (id, corpus, turns) or a dialogue record. The layout is found from the first record
// (detect) and holds for the file: a record of another layout is a malformed record. A record of chat
// messages is read by recordScanner where it can; any record is else decoded in one pass into a struct type
// made for its field names (reflect.StructOf), whose speaker and text fields stay raw JSON, so that a value
// of the wrong type is an error naming the message. Both give the raw values to build, which makes the
// dialogue.
type jsonRecords struct {
	src   *source
	cols  Columns // as given: a named field is required
	sp    speakerMap
	merge bool
	emit  func(place string, d Dialogue) error
	base  string // the file's name without extensions, for ids of records without one
	// noScan turns the fast path (recordScanner) off, so that tests can hold it to the decoder.
	noScan bool

	shape *jsonShape     // nil until a record is read
	dec   *recordDecoder // for records read one at a time
	first Speaker        // a list of strings' first side
}

// jsonShape is a file's record layout.
type jsonShape struct {
	unified bool
	fields  recordFields
	kind    listKind
	typ     reflect.Type // the record struct (dialogue records)
	assumed bool         // kind taken from a record without messages: a later one may tell it
}

// The record struct's fields, by index.
const (
	recID = iota
	recDialogueID
	recDomain
	recList
)

// jsonMessage is the fields read of a message object, in the order of its struct (messageType).
const (
	msgSpeaker = iota
	msgText
	msgToolCalls
	msgFunctionCall
)

var rawType = reflect.TypeFor[json.RawMessage]()

// place names record pos as the format counts (a line, or an element) with its id when known.
type placeFunc func(pos int, id string) string

// record reads one record's bytes (a line, or an element); pos is its line number or element index.
func (j *jsonRecords) record(raw []byte, pos int, place placeFunc) error {
	if j.shape == nil {
		sh, err := j.detect(raw)
		if err != nil {
			return j.src.bad(place(pos, ""), err)
		}
		j.shape, j.dec = sh, j.newDecoder(sh)
		j.src.shape = j.shapeName()
	}
	if j.shape.unified {
		return j.unifiedRecord(raw, pos, place)
	}
	d, own, err := j.dialogueRecord(j.dec, raw, pos)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && j.shape.assumed {
		// The layout was a guess from a record without messages; this record tells it.
		sh, derr := j.detect(raw)
		switch {
		case derr != nil:
			err = derr
		case !sh.assumed:
			j.shape, j.dec = sh, j.newDecoder(sh)
			j.src.shape = j.shapeName()
			d, own, err = j.dialogueRecord(j.dec, raw, pos)
		}
	}
	if err != nil {
		return j.src.bad(place(pos, own), err)
	}
	j.src.dropped.add(j.dec.c.dropped)
	return j.emit(place(pos, own), d)
}

func (j *jsonRecords) shapeName() string {
	if j.shape.unified {
		return "convrep's unified dialogues (id/corpus/turns)"
	}
	return j.shape.fields.shapeName(j.shape.kind, string(j.first))
}

// unifiedRecord reads a line of the unified format (WriteJSONL).
func (j *jsonRecords) unifiedRecord(raw []byte, pos int, place placeFunc) error {
	var d Dialogue
	err := json.Unmarshal(raw, &d)
	if err == nil {
		err = checkDialogue(d)
	}
	if err != nil {
		return j.src.bad(place(pos, d.ID), err)
	}
	turns := d.Turns
	d.Turns = nil
	for _, t := range turns {
		d.Turns = addTurn(d.Turns, t.Speaker, t.Text, j.merge)
	}
	return j.emit(place(pos, d.ID), d)
}

// detect finds the layout from one record: the list of messages is Columns.Messages where named, else
// "messages" or "conversations"; a record with "turns" and neither is the unified format. The kind of
// list is told by its first message, or by FirstSpeaker (strings) where it has none.
func (j *jsonRecords) detect(raw []byte) (*jsonShape, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("a JSON %s, not a record (an object)", te.Value)
		}
		return nil, err
	}
	list := strings.TrimSpace(j.cols.Messages)
	switch {
	case list != "":
		if _, ok := probe[list]; !ok {
			return nil, fmt.Errorf("no field %q (data.columns.messages) among the fields (%s)", list, keysOf(probe))
		}
	case probe["messages"] != nil:
		list = "messages"
	case probe["conversations"] != nil:
		list = "conversations"
	case probe["turns"] != nil:
		return &jsonShape{unified: true}, nil
	default:
		return nil, fmt.Errorf("neither a chat record (a \"messages\" or \"conversations\" list) nor convrep's unified dialogue (id, corpus, turns): name the list of messages in data.columns.messages; the fields are %s", keysOf(probe))
	}
	sh := &jsonShape{fields: recordFieldsFor(list, j.cols)}
	f := sh.fields
	for _, name := range []string{f.list, f.speaker, f.text, f.id, f.domain} {
		if !jsonTagName(name) {
			return nil, fmt.Errorf("field %q cannot be read from JSON records by name (it holds a character other than letters, digits, space and !#$%%&()*+-./:;<=>?@[]^_{|}~)", name)
		}
	}
	v := bytes.TrimSpace(probe[list])
	switch {
	case len(v) > 0 && v[0] == '{' && strings.TrimSpace(j.cols.Messages) == "":
		return nil, fmt.Errorf("field %q is a JSON object, not a list of messages", list)
	case len(v) > 0 && v[0] == '{':
		sh.kind = parallelLists
	case len(v) > 0 && v[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		sh.kind, sh.assumed = listOfMessages, true
		if j.cols.FirstSpeaker != "" {
			sh.kind = listOfStrings
		}
		if len(items) > 0 {
			sh.assumed = false
			if first := bytes.TrimSpace(items[0]); len(first) > 0 && first[0] == '"' {
				sh.kind = listOfStrings
			}
		}
	case string(v) == "null":
		sh.kind, sh.assumed = listOfMessages, true
		if j.cols.FirstSpeaker != "" {
			sh.kind = listOfStrings
		}
	default:
		return nil, fmt.Errorf("field %q is a JSON %s, not a list of messages", list, jsonKind(v))
	}
	if sh.kind == listOfStrings {
		if j.cols.FirstSpeaker == "" {
			return nil, fmt.Errorf("field %q is a list of strings: set data.columns.first_speaker (user or system), the side of the first; the speakers alternate", list)
		}
		j.first = Speaker(strings.ToLower(strings.TrimSpace(j.cols.FirstSpeaker)))
	}
	sh.typ = recordType(f, sh.kind)
	return sh, nil
}

// recordType is the struct a record of fields f and kind is decoded into: recID, recDialogueID (a second
// id field, "dialogue_id", where the id is not named), recDomain as raw JSON, and recList a pointer to the
// list.
func recordType(f recordFields, kind listKind) reflect.Type {
	var list reflect.Type
	switch kind {
	case listOfMessages:
		fields := []reflect.StructField{
			{Name: "Speaker", Type: rawType, Tag: jsonTag(f.speaker)},
			{Name: "Text", Type: rawType, Tag: jsonTag(f.text)},
			{Name: "ToolCalls", Type: rawType, Tag: jsonTag(unlessTaken("tool_calls", f.speaker, f.text))},
			{Name: "FunctionCall", Type: rawType, Tag: jsonTag(unlessTaken("function_call", f.speaker, f.text))},
		}
		list = reflect.SliceOf(reflect.StructOf(fields))
	case listOfStrings:
		list = reflect.SliceOf(rawType)
	case parallelLists:
		list = reflect.StructOf([]reflect.StructField{
			{Name: "Speaker", Type: reflect.SliceOf(rawType), Tag: jsonTag(f.speaker)},
			{Name: "Text", Type: reflect.SliceOf(rawType), Tag: jsonTag(f.text)},
		})
	}
	second := "dialogue_id"
	if f.idNamed {
		second = "-"
	}
	return reflect.StructOf([]reflect.StructField{
		{Name: "ID", Type: rawType, Tag: jsonTag(f.id)},
		{Name: "DialogueID", Type: rawType, Tag: jsonTag(unlessTaken(second, f.id, f.domain, f.list))},
		{Name: "Domain", Type: rawType, Tag: jsonTag(unlessTaken(f.domain, f.id, f.list))},
		{Name: "List", Type: reflect.PointerTo(list), Tag: jsonTag(f.list)},
	})
}

// unlessTaken is name, or "-" (a field not read) where another field has it.
func unlessTaken(name string, others ...string) string {
	if slices.Contains(others, name) {
		return "-"
	}
	return name
}

func jsonTag(name string) reflect.StructTag {
	if name == "-" {
		return `json:"-"`
	}
	return reflect.StructTag(`json:"` + name + `"`)
}

// jsonTagName reports whether encoding/json takes name as a field's key (its rule for tag names).
func jsonTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// recordDecoder decodes dialogue records of one layout into one record value, reused from record to
// record so that its buffers are (a json.RawMessage field keeps its own), and builds their dialogues in
// its chatTurns. Each goroutine has its own.
type recordDecoder struct {
	typ  reflect.Type
	rv   reflect.Value // a *record
	view rawRecord     // rv's values
	scan recordScanner // the fast path
	c    *chatTurns
}

func (j *jsonRecords) newDecoder(sh *jsonShape) *recordDecoder {
	if sh.unified {
		return nil
	}
	return &recordDecoder{typ: sh.typ, rv: reflect.New(sh.typ), c: newChatTurns(j.sp, j.merge, sh.fields.speaker)}
}

// reset empties the record for the next one, keeping its buffers: the decoder leaves a field that a record
// lacks as it was, and decodes a list into the elements already there.
func (dec *recordDecoder) reset() {
	rec := dec.rv.Elem()
	for _, k := range []int{recID, recDialogueID, recDomain} {
		f := rec.Field(k)
		f.SetBytes(f.Bytes()[:0])
	}
	lp := rec.Field(recList)
	if lp.IsNil() {
		lp.Set(reflect.New(lp.Type().Elem()))
		return
	}
	list := lp.Elem()
	if list.Kind() == reflect.Struct { // parallel lists
		emptyRaws(list.Field(0))
		emptyRaws(list.Field(1))
		return
	}
	emptyRaws(list)
}

// emptyRaws empties a slice of raw values, or of structs of them, up to its capacity, and sets its length
// to 0.
func emptyRaws(s reflect.Value) {
	all := s.Slice(0, s.Cap())
	for i := range all.Len() {
		e := all.Index(i)
		if e.Kind() == reflect.Struct {
			for k := range e.NumField() {
				f := e.Field(k)
				f.SetBytes(f.Bytes()[:0])
			}
		} else {
			e.SetBytes(e.Bytes()[:0])
		}
	}
	s.SetLen(0)
}

// dialogueRecord decodes one dialogue record and builds its dialogue; own is the record's own id, if any.
// It changes nothing in j, so that records can be decoded on several goroutines, each with its decoder.
func (j *jsonRecords) dialogueRecord(dec *recordDecoder, raw []byte, pos int) (d Dialogue, own string, err error) {
	if j.shape.kind == listOfMessages && !j.noScan && dec.scan.scan(raw, j.shape.fields) {
		return j.build(dec.c, &dec.scan.rec, reflect.Value{}, raw, pos)
	}
	if len(raw) > 1<<20 {
		defer func() { dec.rv = reflect.New(dec.typ) }() // let a large record's buffers go
	}
	dec.reset()
	if err := json.Unmarshal(raw, dec.rv.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return Dialogue{}, "", typeError{fmt.Sprintf("a JSON %s, not a record (an object)", te.Value), te}
			}
			return Dialogue{}, "", typeError{fmt.Sprintf("field %q is a JSON %s where %s was expected", te.Field, te.Value, jsonWant(te.Type)), te}
		}
		return Dialogue{}, "", err
	}
	rec := dec.rv.Elem()
	r := &dec.view
	r.id, r.dialogueID, r.domain = rec.Field(recID).Bytes(), rec.Field(recDialogueID).Bytes(), rec.Field(recDomain).Bytes()
	r.msgs = r.msgs[:0]
	var list reflect.Value
	if lp := rec.Field(recList); lp.IsNil() {
		r.list = listNull
	} else {
		list, r.list = lp.Elem(), listPresent
		if (list.Kind() == reflect.Slice && list.Len() == 0) || (list.Kind() == reflect.Struct && list.Field(0).Len()+list.Field(1).Len() == 0) {
			// Empty, or missing: a probe tells which.
			var probe map[string]json.RawMessage
			if json.Unmarshal(raw, &probe) == nil {
				if _, ok := probe[j.shape.fields.list]; !ok {
					r.list = listMissing
				}
			}
		}
	}
	if j.shape.kind == listOfMessages && r.list == listPresent {
		for i := range list.Len() {
			m := list.Index(i)
			r.msgs = append(r.msgs, [msgFields][]byte{m.Field(msgSpeaker).Bytes(), m.Field(msgText).Bytes(),
				m.Field(msgToolCalls).Bytes(), m.Field(msgFunctionCall).Bytes()})
		}
	}
	return j.build(dec.c, r, list, raw, pos)
}

// build makes the dialogue of a record's raw values (r), and for a list of strings or parallel lists the
// decoded list.
func (j *jsonRecords) build(c *chatTurns, r *rawRecord, list reflect.Value, raw []byte, pos int) (d Dialogue, own string, err error) {
	f := j.shape.fields
	c.reset()
	id, hasID, err := jsonLabel(r.id)
	if err != nil {
		return c.d, own, fmt.Errorf("field %q: %w", f.id, err)
	}
	if !hasID && !f.idNamed {
		if id, hasID, err = jsonLabel(r.dialogueID); err != nil {
			return c.d, own, fmt.Errorf("field \"dialogue_id\": %w", err)
		}
	}
	if !hasID && f.idNamed {
		return c.d, own, fmt.Errorf("no id (field %q, data.columns.dialogue)", f.id)
	}
	if hasID {
		own = strings.TrimSpace(id)
	}
	c.d.ID = recordID(own, own != "", j.base, int64(pos))
	c.d.Corpus = j.src.corpus
	domain, hasDomain, err := jsonText(r.domain)
	switch {
	case err != nil:
		return c.d, own, fmt.Errorf("field %q: %w", f.domain, err)
	case !hasDomain && f.domainNamed && len(r.domain) == 0:
		return c.d, own, fmt.Errorf("no domain (field %q, data.columns.domain)", f.domain)
	}
	c.d.Domain = domainName(domain)
	switch r.list {
	case listMissing:
		var probe map[string]json.RawMessage
		json.Unmarshal(raw, &probe)
		return c.d, own, fmt.Errorf("no field %q among the fields (%s)", f.list, keysOf(probe))
	case listNull:
		return c.d, own, nil // a dialogue without turns
	}
	switch j.shape.kind {
	case listOfMessages:
		for i, m := range r.msgs {
			if err := j.objectMessage(c, i, m); err != nil {
				return c.d, own, err
			}
		}
	case listOfStrings:
		for i := range list.Len() {
			text, ok, err := jsonText(list.Index(i).Bytes())
			if err != nil {
				return c.d, own, fmt.Errorf("message %d: %w", i, err)
			}
			if err := c.alternating(i, j.first, text, ok); err != nil {
				return c.d, own, err
			}
		}
	case parallelLists:
		sps, texts := list.Field(0), list.Field(1)
		if sps.Len() != texts.Len() {
			return c.d, own, fmt.Errorf("field %q: %d speakers (%q) and %d texts (%q)", f.list, sps.Len(), f.speaker, texts.Len(), f.text)
		}
		for i := range sps.Len() {
			label, hasLabel, err := jsonLabel(sps.Index(i).Bytes())
			if err != nil {
				return c.d, own, fmt.Errorf("message %d: %s: %w", i, f.speaker, err)
			}
			text, hasText, err := jsonText(texts.Index(i).Bytes())
			if err != nil {
				return c.d, own, fmt.Errorf("message %d: %s: %w", i, f.text, err)
			}
			if err := c.message(i, label, hasLabel, text, hasText, false, 0); err != nil {
				return c.d, own, err
			}
		}
	}
	return c.d, own, nil
}

// objectMessage adds message i, given by its raw fields.
func (j *jsonRecords) objectMessage(c *chatTurns, i int, m [msgFields][]byte) error {
	f := j.shape.fields
	raw := m[msgSpeaker]
	label, hasLabel := "", false
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		label, hasLabel = c.sp.known(raw[1 : n-1]) // most labels, without a copy
	}
	if !hasLabel {
		var err error
		if label, hasLabel, err = jsonLabel(raw); err != nil {
			return fmt.Errorf("message %d: %s: %w", i, f.speaker, err)
		}
	}
	text, hasText, parts, err := jsonContent(m[msgText])
	if err != nil {
		return fmt.Errorf("message %d: %s: %w", i, f.text, err)
	}
	toolCall := isSet(m[msgToolCalls]) || isSet(m[msgFunctionCall])
	return c.message(i, label, hasLabel, text, hasText, toolCall, parts)
}

// isSet reports whether a raw field is there and not null, [] or {}.
func isSet(raw []byte) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "[]", "{}":
		return false
	}
	return true
}

// jsonText reads a raw value that should be text: a string, or null or missing (ok false).
func jsonText(raw []byte) (s string, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", false, nil
	case raw[0] != '"':
		return "", false, fmt.Errorf("a JSON %s, not a string", jsonKind(raw))
	case bytes.IndexByte(raw, '\\') < 0:
		return string(raw[1 : len(raw)-1]), true, nil // the decoder checked the string; nothing is escaped
	}
	err = json.Unmarshal(raw, &s)
	return s, err == nil, err
}

// jsonLabel reads a speaker label or an id: a string, or an integer as its decimal form (a class id, as
// HuggingFace datasets writes a ClassLabel).
func jsonLabel(raw []byte) (string, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		if bytes.ContainsAny(raw, ".eE") {
			return "", false, fmt.Errorf("%s is not a string or an integer", clip(string(raw)))
		}
		return string(raw), true, nil
	}
	return jsonText(raw)
}

// jsonPart is one part of a content given as a list of parts.
type jsonPart struct {
	Type *string         `json:"type"`
	Text json.RawMessage `json:"text"`
}

// jsonContent reads a message's text: a string, null or missing, or a list of parts whose text parts
// ({"type": "text", "text"}, or plain strings) are joined with a space; other parts (an image) are counted.
func jsonContent(raw []byte) (text string, ok bool, other int, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		text, ok, err = jsonText(raw)
		return text, ok, 0, err
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false, 0, err
	}
	var texts []string
	for k, p := range parts {
		p = bytes.TrimSpace(p)
		if len(p) > 0 && p[0] == '"' {
			s, _, err := jsonText(p)
			if err != nil {
				return "", false, 0, fmt.Errorf("part %d: %w", k, err)
			}
			texts = append(texts, s)
			continue
		}
		var part jsonPart
		if err := json.Unmarshal(p, &part); err != nil {
			return "", false, 0, fmt.Errorf("part %d is a JSON %s, not a string or an object with a type", k, jsonKind(p))
		}
		if part.Type == nil || *part.Type != "text" {
			other++
			continue
		}
		s, _, err := jsonText(part.Text)
		if err != nil {
			return "", false, 0, fmt.Errorf("part %d: text: %w", k, err)
		}
		texts = append(texts, s)
	}
	return strings.Join(texts, " "), len(texts) > 0, other, nil
}

// jsonKind names the JSON type of a raw value.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// typeError is a value of the wrong type in a record, said in the record's terms.
type typeError struct {
	msg string
	te  *json.UnmarshalTypeError
}

func (e typeError) Error() string { return e.msg }

func (e typeError) Unwrap() error { return e.te }

// jsonWant says what a decoder's Go type stands for in an error.
func jsonWant(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		return "a list"
	case reflect.Struct:
		return "an object"
	}
	return t.String()
}

// keysOf lists a record's keys, sorted and clipped, for an error.
func keysOf(m map[string]json.RawMessage) string {
	var ks []string
	for k := range m {
		ks = append(ks, fmt.Sprintf("%q", clip(k)))
	}
	slices.Sort(ks)
	if len(ks) > 20 {
		ks = append(ks[:20], "…")
	}
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}
