package datasets

import (
	"fmt"
	"strings"
	"testing"
)

// scanLines are chat records for the fast path and the decoder: plain ones the scanner reads, and the
// others it must give up on or read as encoding/json does.
var scanLines = []string{
	`{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}`,
	`{"id": "x", "domain": "Billing", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "a \"quoted\" \u00e9 \u2028 word"}, {"role": "assistant", "content": null, "tool_calls": [{"id": 1}]}, {"role": "tool", "content": "{}"}]}` + "\n",
	`{"id": 7, "messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}], "name": "bob"}], "extra": [1, -2.5e+3, true, false, null, {"a": [[]]}]}`,
	`{"dialogue_id": "d1", "messages": []}`,
	`{"id": "y", "messages": null}`,
	`{"id": "z"}`,
	`{"messages": [{"Role": "user", "content": "hi"}]}`,
	`{"messages": [{"role": "user", "content": "hi", "role": "assistant"}]}`,
	`{"messages": [{"role": "user", "content": "hi"}], "messages": [{"role": "assistant", "content": "bye"}]}`,
	`{"messages": [{"role": 1.5, "content": "hi"}]}`,
	`{"messages": [{"role": 0, "content": "hi"}]}`,
	`{"messages": [{"role": "user", "content": 3}]}`,
	`{"messages": [{"role": "narrator", "content": "once"}]}`,
	`{"messages": {"role": "user"}}`,
	`{"messages": ["hi"]}`,
	`{"messages": [{"role": "user", "content": "hi"}]} x`,
	`{"messages": [{"role": "user", "content": "hi"},]}`,
	`{"messages": [{"role": "user", "content": "a` + "\t" + `b"}]}`,
	`{"messages": [{"role": "user", "content": "bad \x escape"}]}`,
	`{"messages": [{"role": "user", "content": "hi"}], "n": 01}`,
	`{"messages": [{"role": "us\u0065r", "content": "hi"}]}`,
	`{"méssages": 1, "messages": [{"role": "user", "content": "hi"}]}`,
	`{"id": "a", "ID": "b", "messages": []}`,
	`[1]`,
	`{"messages": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	`{"x": ` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `, "messages": []}`,
	`{"messages": [{"role": "user", "content": "` + "\xff\xfe" + `"}]}`,
}

// readBoth reads one chat record with the fast path on and off.
func readBoth(line []byte) (fast, slow string, scanned bool) {
	fields := recordFieldsFor("messages", Columns{})
	read := func(noScan bool) string {
		j := &jsonRecords{src: newSource("f", "f", ReadOptions{}), sp: FileSet{}.speakerMap(true), base: "f", noScan: noScan}
		j.shape = &jsonShape{fields: fields, kind: listOfMessages, typ: recordType(fields, listOfMessages)}
		dec := j.newDecoder(j.shape)
		d, own, err := j.dialogueRecord(dec, line, 1)
		return fmt.Sprintf("%+v|%s|%v|%v", d, own, err, dec.c.dropped)
	}
	var s recordScanner
	return read(false), read(true), s.scan(line, fields)
}

// The fast path reads a record as the decoder does, or gives up; it reads the plain ones.
func TestChatScanner(t *testing.T) {
	for i, l := range scanLines {
		fast, slow, scanned := readBoth([]byte(l))
		if fast != slow {
			t.Errorf("line %d %.80q:\nfast %s\nslow %s", i, l, fast, slow)
		}
		if want := i < 6; scanned != want && i <= 6 { // the first six are plain; the seventh's "Role" is not
			t.Errorf("line %d %.80q: scanned %v, want %v", i, l, scanned, want)
		}
	}
}

func FuzzChatScanner(f *testing.F) {
	for _, l := range scanLines {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if fast, slow, _ := readBoth(line); fast != slow {
			t.Fatalf("fast %s\nslow %s", fast, slow)
		}
	})
}
