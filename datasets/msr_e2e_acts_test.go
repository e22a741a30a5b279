package datasets

import (
	"reflect"
	"strings"
	"testing"
)

// User messages keep their acts (trimmed, empty columns dropped) and their place; agent lines, empty texts and
// the header are left out; files come in name order, lines in file order.
func TestReadMSRUserMessages(t *testing.T) {
	root := t.TempDir()
	taxi := msrHeaderLine + strings.Join([]string{
		"5\t2\tts\tuser\tlater message first\tinform(pickup_time=9pm) \t\t",
		"5\t1\tts\tagent\tWhere to?\trequest(dropoff_location)",
		"5\t3\tts\tuser\t\"a cab, please\"",
		"6\t1\tts\tuser\t  \tthanks()",
		"6\t2\tts\tuser\tTwo \\u201Cacts\\u201D\tgreeting(greeting=hi)\trequest(taxi;date=today)",
	}, "\n") + "\n"
	putTestFile(t, root, msrZip, zipTestBytes(t,
		zipMember{Name: "taxi_all.tsv", Data: []byte(taxi)},
		zipMember{Name: "movie_all.tsv", Data: []byte(msrHeaderLine + "1\t1\tts\tuser\thi there\tgreeting()\n")}))
	got, err := ReadMSRUserMessages(root, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zip := root + "/" + msrZip
	want := []MSRUserMessage{
		{Source: zip + "!movie_all.tsv", Line: 2, Domain: "movie", Session: "1", Text: "hi there", Acts: []string{"greeting()"}},
		{Source: zip + "!taxi_all.tsv", Line: 2, Domain: "taxi", Session: "5", Text: "later message first", Acts: []string{"inform(pickup_time=9pm)"}},
		{Source: zip + "!taxi_all.tsv", Line: 4, Domain: "taxi", Session: "5", Text: "a cab, please"},
		{Source: zip + "!taxi_all.tsv", Line: 6, Domain: "taxi", Session: "6", Text: "Two “acts”", Acts: []string{"greeting(greeting=hi)", "request(taxi;date=today)"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read\n%+v\nwant\n%+v", got, want)
	}
}

// A malformed line fails the read naming the member and the line; SkipBad passes over it.
func TestReadMSRUserMessagesMalformed(t *testing.T) {
	root := t.TempDir()
	msrZipWith(t, root, msrHeaderLine+"1\t1\tts\tuser\tfine\n1\tx\tts\tuser\tbad id\n")
	_, err := ReadMSRUserMessages(root, ReadOptions{})
	if err == nil || !strings.Contains(err.Error(), "taxi_all.tsv: line 3 (session 1)") {
		t.Fatalf("error %v, want one naming taxi_all.tsv line 3", err)
	}
	got, err := ReadMSRUserMessages(root, ReadOptions{SkipBad: true})
	if err != nil || len(got) != 2 { // movie's "hi" and taxi's "fine"
		t.Fatalf("SkipBad: %d messages, error %v", len(got), err)
	}
}
