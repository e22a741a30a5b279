package datasets

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"convrep/internal/shared"
)

// realCorpora caches each shared corpus, read once per test binary with the default options (SGD alone is
// 400 MB of JSON).
var realCorpora sync.Map // name -> func() ([]Dialogue, error)

func readSharedCorpus(t *testing.T, name string) []Dialogue {
	t.Helper()
	c, err := LookupCorpus(name)
	if err != nil {
		t.Fatal(err)
	}
	root := shared.MustPath(t, "data", "pretrain", c.Folder)
	f, _ := realCorpora.LoadOrStore(name, sync.OnceValues(func() ([]Dialogue, error) {
		return ReadCorpus(name, root, ReadOptions{})
	}))
	ds, err := f.(func() ([]Dialogue, error))()
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func sharedCorpusRoot(t *testing.T, name string) string {
	c, err := LookupCorpus(name)
	if err != nil {
		t.Fatal(err)
	}
	return shared.MustPath(t, "data", "pretrain", c.Folder)
}

// The counts are those of the data README (turns: as read, empty utterances dropped), split by the ID
// prefix where the ID carries one; the first turns are copied from the raw files (white space collapsed).
func TestReadSharedCorpora(t *testing.T) {
	cases := []struct {
		name      string
		dialogues int
		turns     int
		byPrefix  map[string]int
		files     int
		firstID   string
		domain    string
		first     []Turn
	}{
		{name: "sgd", dialogues: 12174 + 2098 + 2921, turns: 312248,
			byPrefix: map[string]int{"train/": 12174, "dev/": 2098, "test/": 2921}, files: 96 + 17 + 24,
			firstID: "train/1_00000", domain: "restaurants", first: []Turn{
				{User, "I am feeling hungry so I would like to find a place to eat."},
				{System, "Do you have a specific which you want the eating place to be located at?"},
				{User, "I would like for it to be in San Jose."}}},
		{name: "msr_e2e", dialogues: 2890 + 4103 + 3094, turns: 74685,
			byPrefix: map[string]int{"movie/": 2890, "restaurant/": 4103, "taxi/": 3094}, files: 1,
			firstID: "movie/1", domain: "movie", first: []Turn{
				{User, "I'd like 2 tickets to see Zoolander 2 tomorrow at Regal Meridian 16 theater in Seattle at 9:25 PM"},
				{System, "Okay, your purchase of 2 tickets for Zoolander 2 is confirmed."}}},
		// KVRET's train split holds one dialogue with no turns (45da0efd-...); it is kept, so counts match.
		{name: "kvret", dialogues: 2425 + 302 + 304, turns: 15918, files: 1,
			firstID: "118f8056-0e66-43df-8eb8-bfe9056ca01a", domain: "navigate", first: []Turn{
				{User, "where's the nearest parking garage"},
				{System, "The nearest parking garage is Dish Parking at 550 Alester Ave. Would you like directions there?"}}},
		{name: "frames", dialogues: 1369, turns: 19986, files: 1,
			firstID: "e2c0fc6c-2134-4891-8353-ef16d8412c9a", domain: "travel", first: []Turn{
				{User, "I'd like to book a trip to Atlantis from Caprica on Saturday, August 13, 2016 for 8 adults. I have a tight budget of 1700."},
				{System, "Hi...I checked a few options for you, and unfortunately, we do not currently have any trips that meet this criteria. Would you like to book an alternate travel option?"}}},
		// Each WOZ turn is a system transcript then a user one; the first system transcript is empty.
		{name: "woz2", dialogues: 1200, turns: 2*(2536+830+1646) - 1200,
			byPrefix: map[string]int{"train/": 600, "validate/": 200, "test/": 400}, files: 3,
			firstID: "train/0", domain: "restaurant", first: []Turn{
				{User, "Are there any eritrean restaurants in town?"},
				{System, "No, there are no eritrean restaurants in town. Would you like a different restaurant?"},
				{User, "How about Chinese food?"}}},
		{name: "camrest676", dialogues: 676, turns: 2 * 2744, files: 1,
			firstID: "0", domain: "restaurant", first: []Turn{
				{User, "I need to find an expensive restauant that's in the south section of the city."},
				{System, "There are several restaurants in the south part of town that serve expensive food. Do you have a cuisine preference?"},
				{User, "No I don't care about the type of cuisine."}}},
		// By default the 2,924 MultiWOZ 2.0 dialogues (28,912 turns) are dropped: see TestMetaLWOZMultiWOZLeak.
		{name: "metalwoz", dialogues: 2319, turns: 26201,
			byPrefix: map[string]int{"dstc8_metalwoz_heldout/": 2319, "dstc8_multiwoz2.0/": 0}, files: 1,
			firstID: "dstc8_metalwoz_heldout/e0868745", domain: "booking_flight", first: []Turn{
				{System, "Hello how may I help you?"},
				{User, "Hello, I want to book a flight."},
				{System, "Can I help you book a flight to greece?"}}},
		{name: "taskmaster", dialogues: 3710, turns: 13915, files: 8,
			firstID: "dlg-881444f3-24fc-4e54-ac61-2196f60e88fa", domain: "coffee", first: []Turn{
				{User, "one Chai Latte please"},
				{System, "is the order displayed correct and ready to send off to be made?"},
				{User, "yes"}}},
	}
	if len(cases) != len(Corpora()) {
		t.Fatalf("%d corpora registered, %d tested", len(Corpora()), len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds := readSharedCorpus(t, c.name)
			st := Count(ds)
			if st.Dialogues != c.dialogues || st.Turns != c.turns {
				t.Errorf("%d dialogues, %d turns; want %d, %d", st.Dialogues, st.Turns, c.dialogues, c.turns)
			}
			for prefix, want := range c.byPrefix {
				n := 0
				for _, d := range ds {
					if strings.HasPrefix(d.ID, prefix) {
						n++
					}
				}
				if n != want {
					t.Errorf("%d dialogues with id prefix %s, want %d", n, prefix, want)
				}
			}
			checkReadDialogues(t, c.name, ds, false)
			d := ds[0]
			if d.ID != c.firstID || d.Domain != c.domain {
				t.Errorf("first dialogue %s (domain %q), want %s (%q)", d.ID, d.Domain, c.firstID, c.domain)
			}
			if len(d.Turns) < len(c.first) {
				t.Fatalf("first dialogue has %d turns", len(d.Turns))
			}
			for j, want := range c.first {
				if d.Turns[j] != want {
					t.Errorf("first dialogue turn %d = %+v\nwant %+v", j, d.Turns[j], want)
				}
			}
			files, err := Files(c.name, sharedCorpusRoot(t, c.name))
			if err != nil || len(files) != c.files {
				t.Errorf("Files: %d files (%v), want %d", len(files), err, c.files)
			}
		})
	}
}

// Merging keeps every word and leaves no two neighbouring turns of one speaker; MSR-E2E has such turns.
func TestMergeSameSpeaker(t *testing.T) {
	plain := readSharedCorpus(t, "msr_e2e")
	merged, err := ReadCorpus("msr_e2e", sharedCorpusRoot(t, "msr_e2e"), ReadOptions{MergeSameSpeaker: true})
	if err != nil {
		t.Fatal(err)
	}
	checkReadDialogues(t, "msr_e2e", merged, true)
	p, m := Count(plain), Count(merged)
	if m.Dialogues != p.Dialogues || m.Words != p.Words || m.Turns >= p.Turns {
		t.Errorf("merged %+v from %+v: want the same dialogues and words in fewer turns", m, p)
	}
	for i := range plain {
		var a, b []string
		for _, tr := range plain[i].Turns {
			a = append(a, tr.Text)
		}
		for _, tr := range merged[i].Turns {
			b = append(b, tr.Text)
		}
		if strings.Join(a, " ") != strings.Join(b, " ") {
			t.Fatalf("dialogue %s: merged text differs from the plain turns joined", plain[i].ID)
		}
	}
}

func TestReadAll(t *testing.T) {
	data := shared.MustPath(t, "data", "pretrain")
	ds, err := ReadAll(data, []string{"camrest676", "woz2"}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 676+1200 || ds[0].Corpus != "camrest676" || ds[len(ds)-1].Corpus != "woz2" {
		t.Errorf("%d dialogues, first of %s, last of %s: want 1876, camrest676 then woz2", len(ds), ds[0].Corpus, ds[len(ds)-1].Corpus)
	}
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"woz2", "nope"}, `unknown corpus "nope"`},
		{[]string{"woz2", "woz2"}, "listed twice"},
	} {
		if _, err := ReadAll(data, c.names, ReadOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadAll(%v): error %v, want %q", c.names, err, c.want)
		}
	}
	if _, err := ReadAll(t.TempDir(), []string{"woz2"}, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "woz2") {
		t.Errorf("missing corpus folder: error %v", err)
	}
}

// An empty corpus folder is an error naming what was looked for, from Files and ReadCorpus alike.
func TestEmptyCorpusFolder(t *testing.T) {
	for _, name := range Corpora() {
		root := t.TempDir()
		if _, err := Files(name, root); err == nil || !strings.Contains(err.Error(), root) {
			t.Errorf("%s: Files of an empty folder: %v", name, err)
		}
		if _, err := ReadCorpus(name, root, ReadOptions{SkipBad: true}); err == nil {
			t.Errorf("%s: an empty folder read without error", name)
		}
	}
	if _, err := ReadCorpus("sgd", filepath.Join(t.TempDir(), "absent"), ReadOptions{}); err == nil {
		t.Error("a missing folder read without error")
	}
}

// Two dialogues with one ID break the promise IDs make; SkipBad keeps the first.
func TestRepeatedIDs(t *testing.T) {
	root := t.TempDir()
	rec := `{"dialogue_idx": 3, "dialogue": [{"system_transcript": "", "transcript": "hi"}]}`
	putTestFile(t, root, "data/woz/woz_train_en.json", []byte("["+rec+","+rec+"]"))
	if _, err := ReadCorpus("woz2", root, ReadOptions{}); err == nil || !strings.Contains(err.Error(), `"train/3" appears twice`) {
		t.Errorf("error %v, want the repeated id named", err)
	}
	ds, err := ReadCorpus("woz2", root, ReadOptions{SkipBad: true})
	if err != nil || len(ds) != 1 {
		t.Errorf("SkipBad: %d dialogues, %v; want 1", len(ds), err)
	}
}
