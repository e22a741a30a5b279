package datasets

import (
	"bytes"
	"strings"
	"testing"
)

const msrHeaderLine = "\ufeffsession.ID\tMessage.ID\tMessage.Timestamp\tMessage.From\tMessage.Text\tDialog-Acts\n"

func msrZipWith(t *testing.T, root, taxi string) {
	movie := msrHeaderLine + "1\t1\tts\tuser\thi\tgreeting()\n"
	putTestFile(t, root, msrZip, zipTestBytes(t, zipMember{Name: "movie_all.tsv", Data: []byte(movie)},
		zipMember{Name: "taxi_all.tsv", Data: []byte(taxi)}))
}

func TestMSRMalformed(t *testing.T) {
	tsv := func(lines ...string) func(*testing.T, string) {
		return func(t *testing.T, root string) { msrZipWith(t, root, msrHeaderLine+strings.Join(lines, "\n")+"\n") }
	}
	broken := func(t *testing.T, root string) {
		taxi := msrHeaderLine + "1\t1\tts\tuser\tI need a cab MARKER\tx\n"
		z := zipTestBytes(t, zipMember{Name: "taxi_all.tsv", Data: []byte(taxi), Store: true})
		putTestFile(t, root, msrZip, corruptStoredMember(t, z, "MARKER", "MARKEX"))
	}
	runMalformedCases(t, "msr_e2e", []malformedCase{
		{name: "too few columns", setup: tsv("1\t1\tts\tuser\tok", "1\t2\tts\tagent"),
			want: []string{"original_data.zip!taxi_all.tsv", "line 3 (session 1)", "4 tab-separated columns"}, kept: 2, skipped: 1},
		{name: "unknown speaker", setup: tsv("7\t1\tts\tbot\thello"),
			want: []string{"taxi_all.tsv", "line 2 (session 7)", `speaker "bot" is neither user nor agent`}, kept: 1, skipped: 1},
		{name: "message id", setup: tsv("7\tfirst\tts\tuser\thello", "8\t1\tts\tuser\thi"),
			want: []string{"taxi_all.tsv", "line 2 (session 7)", `message id "first" is not a number`}, kept: 2, skipped: 1},
		{name: "no session", setup: tsv(" \t1\tts\tuser\thello"),
			want: []string{"taxi_all.tsv", "line 2", "missing session id"}, kept: 1, skipped: 1},
		{name: "broken member", setup: broken,
			want: []string{"original_data.zip!taxi_all.tsv", "line 3", "checksum"}, kept: 1, skipped: 1},
		{name: "broken archive", setup: func(t *testing.T, root string) { putTestFile(t, root, msrZip, []byte("PK\x03\x04 cut")) },
			want: []string{"original_data.zip", "not a readable zip archive"}, skipped: -1},
	})
}

// Sessions are ordered by message id (taxi session 461 lists message 5 last), the export's quotes and JSON
// escapes are undone, and a session keeps the place where it first appears.
func TestMSRParse(t *testing.T) {
	in := msrHeaderLine + strings.Join([]string{
		"461\t1\tts\tuser\tI need a ride",
		"461\t2\tts\tagent\t\"How many people, please?\"",
		"462\t1\tts\tuser\tother session",
		"461\t4\tts\tagent\t\"rides:\\r\\nuberX: $95\\/h \\u201CX\\u201D\"\tinform()\textra\tcolumns",
		"",
		"461\t3\tts\tuser\tCan I fit 3?\r",
	}, "\n")
	ds, err := parseMSR(newSource("msr_e2e", "taxi_all.tsv", ReadOptions{}), "taxi", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Dialogue{
		{ID: "taxi/461", Corpus: "msr_e2e", Domain: "taxi", Turns: []Turn{{User, "I need a ride"}, {System, "How many people, please?"},
			{User, "Can I fit 3?"}, {System, "rides: uberX: $95/h “X”"}}},
		{ID: "taxi/462", Corpus: "msr_e2e", Domain: "taxi", Turns: []Turn{{User, "other session"}}},
	}
	if !sameReadDialogues(ds, want) {
		t.Errorf("read %+v\nwant %+v", ds, want)
	}
}

func TestMSRText(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:                        "plain",
		`"quoted, with a comma"`:       "quoted, with a comma",
		`"`:                            `"`,
		`a\r\nb\tc`:                    "a  b c",
		`Caf\u00E9 \ud83d\ude00`:       "Café 😀",
		`lone \ud83d surrogate`:        "lone \uFFFD surrogate",
		`Action\Adventure \u12 \uZZZZ`: `Action\Adventure \u12 \uZZZZ`,
		`03\/19\/2016 end\`:            `03/19/2016 end\`,
		`great\\`:                      `great\\`,
	} {
		if got := msrText(in); got != want {
			t.Errorf("msrText(%q) = %q, want %q", in, got, want)
		}
	}
}

// The challenge's repository keeps the TSV files unpacked in data/; they read like the archive's members.
func TestMSRPlainFiles(t *testing.T) {
	root := t.TempDir()
	putTestFile(t, root, "data/restaurant_all.tsv", []byte(msrHeaderLine+"2\t1\tts\tuser\tb\n"))
	putTestFile(t, root, "data/movie_all.tsv", []byte(msrHeaderLine+"1\t1\tts\tuser\ta\n"))
	ds, err := ReadCorpus("msr_e2e", root, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].ID != "movie/1" || ds[1].ID != "restaurant/2" || ds[1].Domain != "restaurant" {
		t.Errorf("read %+v", ds)
	}
}

// Two spot checks on the shared corpus: the reordered taxi session 461 and an escaped movie text.
func TestMSRSharedSpotChecks(t *testing.T) {
	byID := map[string]Dialogue{}
	for _, d := range readSharedCorpus(t, "msr_e2e") {
		byID[d.ID] = d
	}
	taxi := byID["taxi/461"].Turns
	if len(taxi) != 12 || taxi[3].Text != "How many people, please?" || taxi[4] != (Turn{User, "Can I fit 3 in the cheapest service?"}) ||
		!strings.HasPrefix(taxi[7].Text, "I found the following rides available, which would you like to book? uberX: $95-125 ") {
		t.Errorf("taxi/461: %+v", taxi)
	}
	movie := byID["movie/1156"].Turns
	found := false
	for _, tr := range movie {
		found = found || strings.HasPrefix(tr.Text, "Hi, I would like to get movie tickets for “Deadpool” tonight")
	}
	if !found {
		t.Errorf("movie/1156 has no decoded “Deadpool”: %+v", movie)
	}
}

func FuzzMSR(f *testing.F) {
	f.Add([]byte(msrHeaderLine + "1\t1\tts\tuser\thi\n1\t2\tts\tagent\t\"a, b\\u201C\"\n2\t1\tts\tuser\t\n"))
	f.Add([]byte("1\t1\tts\tuser\n\n\t\t\t\t\n1\tx\tts\tuser\ta\\ud83d\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRecordParser(t, "msr_e2e", data, func(src *source, r *bytes.Reader) ([]Dialogue, error) { return parseMSR(src, "taxi", r) })
	})
}
