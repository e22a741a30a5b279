package tokenizers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// wozUtterances reads the user and system turns of the WOZ 2.0 test set.
func wozUtterances(b *testing.B) []string {
	path := filepath.Join(sharedDir(b), "data", "pretrain", "woz2", "data", "woz", "woz_test_en.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var dialogues []struct {
		Dialogue []struct {
			Transcript       string `json:"transcript"`
			SystemTranscript string `json:"system_transcript"`
		} `json:"dialogue"`
	}
	if err := json.Unmarshal(raw, &dialogues); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, d := range dialogues {
		for _, turn := range d.Dialogue {
			for _, s := range []string{turn.Transcript, turn.SystemTranscript} {
				if s != "" {
					out = append(out, s)
				}
			}
		}
	}
	if len(out) < 1000 {
		b.Fatalf("%s: only %d utterances", path, len(out))
	}
	return out
}

// BenchmarkEncode measures single-goroutine throughput in tokens per
// second over every WOZ 2.0 test utterance (one op = the whole set).
func BenchmarkEncode(b *testing.B) {
	texts := wozUtterances(b)
	for _, name := range []string{"bert", "roberta"} {
		b.Run(name, func(b *testing.B) {
			tok := caseFiles[0].setup(b)
			if name == "roberta" {
				tok = caseFiles[1].setup(b)
			}
			tokens := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, s := range texts {
					ids, err := tok.Encode(s)
					if err != nil {
						b.Fatal(err)
					}
					tokens += len(ids)
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "texts/s")
		})
	}
}
