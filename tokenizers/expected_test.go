package tokenizers

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// modelExpected is the part of fixtures/<model>/expected.json that the
// tokenizer must reproduce.
type modelExpected struct {
	Rows []struct {
		Text     string  `json:"text"`
		TextPair *string `json:"text_pair"`
	} `json:"rows"`
	InputIDs      [][]int64 `json:"input_ids"`
	AttentionMask [][]int64 `json:"attention_mask"`
	TokenTypeIDs  [][]int64 `json:"token_type_ids"`
	Lengths       []int     `json:"lengths"`
}

// TestExpectedBatches re-creates the padded batches the reference model
// outputs were computed on (two single texts and one pair per model).
func TestExpectedBatches(t *testing.T) {
	for _, tc := range []struct {
		dir       string
		kind      Kind
		padID     int64
		withTypes bool
	}{
		{"tiny-bert", WordPiece, 0, true},
		{"tiny-distilbert", WordPiece, 0, false},
		{"tiny-roberta", ByteLevelBPE, 1, false},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			tok := mustLoad(t, fixture(t, tc.dir))
			if tok.Kind() != tc.kind || tok.PadID() != tc.padID {
				t.Fatalf("kind %v pad %d, want %v %d", tok.Kind(), tok.PadID(), tc.kind, tc.padID)
			}
			if tok.ModelMaxLength() != 64 {
				t.Errorf("model max length %d, want 64", tok.ModelMaxLength())
			}
			path := fixture(t, tc.dir, "expected.json")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want modelExpected
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			rows := make([]Input, len(want.Rows))
			for i, r := range want.Rows {
				rows[i] = Input{Text: r.Text}
				if r.TextPair != nil {
					rows[i].Pair, rows[i].HasPair = *r.TextPair, true
				}
			}
			got, err := tok.EncodeInputs(rows, BatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.InputIDs, want.InputIDs) {
				t.Errorf("input_ids\n got %v\nwant %v", got.InputIDs, want.InputIDs)
			}
			if !reflect.DeepEqual(got.AttentionMask, want.AttentionMask) {
				t.Errorf("attention_mask\n got %v\nwant %v", got.AttentionMask, want.AttentionMask)
			}
			if !reflect.DeepEqual(got.Lengths, want.Lengths) {
				t.Errorf("lengths %v, want %v", got.Lengths, want.Lengths)
			}
			if tc.withTypes && !reflect.DeepEqual(got.TokenTypeIDs, want.TokenTypeIDs) {
				t.Errorf("token_type_ids\n got %v\nwant %v", got.TokenTypeIDs, want.TokenTypeIDs)
			}
			if tc.kind == ByteLevelBPE {
				for i, row := range got.TokenTypeIDs {
					for _, v := range row {
						if v != 0 {
							t.Errorf("RoBERTa row %d has token type %d", i, v)
						}
					}
				}
			}

			// The single-text rows alone through EncodeBatch, padded to
			// their own longest row (12), agree with the same prefix.
			var texts []string
			for _, r := range rows {
				if !r.HasPair {
					texts = append(texts, r.Text)
				}
			}
			single, err := tok.EncodeBatch(texts, BatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range texts {
				if w := len(single.InputIDs[i]); w != 12 {
					t.Fatalf("EncodeBatch width %d, want 12", w)
				}
				if !reflect.DeepEqual(single.InputIDs[i], want.InputIDs[i][:12]) {
					t.Errorf("EncodeBatch row %d: %v, want %v", i, single.InputIDs[i], want.InputIDs[i][:12])
				}
			}

			// The pair row through EncodePairBatch, padded to MaxLength 24.
			p := rows[2]
			pb, err := tok.EncodePairBatch([]string{p.Text}, []string{p.Pair}, BatchOptions{MaxLength: 24, PadToMax: true})
			if err != nil {
				t.Fatal(err)
			}
			wantRow := append(append([]int64(nil), want.InputIDs[2]...), tc.padID, tc.padID, tc.padID, tc.padID)
			if !reflect.DeepEqual(pb.InputIDs[0], wantRow) {
				t.Errorf("EncodePairBatch: %v, want %v", pb.InputIDs[0], wantRow)
			}
			if pb.Lengths[0] != 20 || pb.AttentionMask[0][19] != 1 || pb.AttentionMask[0][20] != 0 {
				t.Errorf("EncodePairBatch length %d mask %v", pb.Lengths[0], pb.AttentionMask[0])
			}
		})
	}
}
