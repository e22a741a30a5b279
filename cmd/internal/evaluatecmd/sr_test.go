package evaluatecmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"convrep/evaluate"
	"convrep/internal/shared"
)

// tinyMSR writes an MSR-E2E corpus folder under a pretraining data root (root/msr_e2e/data/*_all.tsv, the
// challenge repository's layout) and returns the root. Of its user messages, the two-word one is too short,
// the one without acts has no label, and one text is given twice with the same label.
func tinyMSR(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	header := "session.ID\tMessage.ID\tMessage.Timestamp\tMessage.From\tMessage.Text\tDialog-Acts\n"
	movie := header + strings.Join([]string{
		"1\t1\tts\tuser\tI want two tickets for the movie tonight\trequest(ticket;numberofpeople=2;date=tonight)",
		"1\t2\tts\tagent\tWhich movie would you like?\trequest(moviename)",
		"1\t3\tts\tuser\tthe new movie Zootopia please\tinform(moviename=Zootopia)",
		"2\t1\tts\tuser\tbook three tickets for the movie tomorrow\trequest(ticket;numberofpeople=3;date=tomorrow)",
		"2\t2\tts\tuser\tthe movie Deadpool please\tinform(moviename=Deadpool)",
		"3\t1\tts\tuser\tthanks much\tthanks()",
		"3\t2\tts\tuser\tthank you very much\tthanks()",
		"3\t3\tts\tuser\tthank you so much\tthanks()",
		"3\t4\tts\tuser\tsomething with no acts at all",
		"3\t5\tts\tuser\tthank you very much\tthanks()",
	}, "\n") + "\n"
	taxi := header + strings.Join([]string{
		"1\t1\tts\tuser\tI need a taxi to the airport for two\trequest(taxi;dropoff_location=airport;numberofpeople=2)",
		"1\t2\tts\tuser\tget me a taxi to the station\trequest(taxi;dropoff_location=station)",
		"1\t3\tts\tuser\tthank you so much for the taxi\tthanks()",
	}, "\n") + "\n"
	write(t, filepath.Join(root, "msr_e2e", "data", "movie_all.tsv"), movie)
	write(t, filepath.Join(root, "msr_e2e", "data", "taxi_all.tsv"), taxi)
	return root
}

// The sr task end to end on a tiny corpus with a tiny random model: two rows (MAP, MRR) over the task's
// default seeds, with the pool's statistics in the settings and the notes, JSON and Markdown.
func TestSREndToEnd(t *testing.T) {
	model := shared.MustPath(t, "fixtures", "tiny-bert")
	out := filepath.Join(t.TempDir(), "sr.json")
	args := []string{"sr", "--model", model, "--data-root", tinyMSR(t), "--max-length", "16", "--threads", "1", "--quiet", "--output", out}
	if err := dispatch(context.Background(), args, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	var res evaluate.Result
	body, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(body, &res)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Task != "sr" || len(res.Rows) != 2 {
		t.Fatalf("result %+v", res)
	}
	// Pool: 12 user messages read; the short one, the unlabelled one and the repeat left out: 9 texts under 5
	// labels, request(date;numberofpeople;ticket) 2, inform(moviename) 2, thanks() 3, and the two taxi
	// requests, which differ by numberofpeople, 1 each. Their 2 queries are dropped in every seed.
	for i, metric := range []string{"map", "mrr"} {
		r := res.Rows[i]
		if r.Metric != metric || r.Dataset != "msr_e2e" || r.Variant != "bm25-100" || fmt.Sprint(r.Seeds) != "[0 1 2]" ||
			len(r.Values) != 3 || r.Mean <= 0 || r.Mean > 1 {
			t.Errorf("row %+v", r)
		}
		if r.Settings["pool"] != 9.0 || r.Settings["labels"] != 5.0 || fmt.Sprint(r.Settings["queries_dropped"]) != "[2 2 2]" || r.Settings["max_positives"] != 30.0 || r.Settings["candidates"] != 100.0 {
			t.Errorf("settings %v", r.Settings)
		}
	}
	if len(res.Notes) != 3 || !strings.Contains(res.Notes[0], "of 12 read: 1 shorter, 1 without acts, 1 repeats") ||
		!strings.Contains(res.Notes[0], "5 labels, 2 of them with one message; the largest, thanks(), holds 33.3%") {
		t.Errorf("notes %q", res.Notes)
	}
	md, err := os.ReadFile(strings.TrimSuffix(out, ".json") + ".md")
	if err != nil || !strings.Contains(string(md), "| bm25-100 |") {
		t.Errorf("markdown %q, %v", md, err)
	}
}
