package suite

import (
	"testing"

	"convrep/evaluate"
	"convrep/models"
)

// The suite runs each task at DSE App. B.1's input length unless --max-length names one for all.
func TestSuiteTaskLengths(t *testing.T) {
	for _, c := range []struct {
		kind string
		flag int
		want int
	}{
		{"intent", PerTaskLength, 64}, {"oos", PerTaskLength, 64}, {"response", PerTaskLength, 128},
		{"intent", 0, 0}, {"response", 0, 0}, {"response", 32, 32}, {"oos", 256, 256},
	} {
		if got := taskLength(c.kind, c.flag); got != c.want {
			t.Errorf("taskLength(%s, %d) = %d, want %d", c.kind, c.flag, got, c.want)
		}
	}
}

// A session at another length has encoders cutting at that length, its own cache, and leaves the
// original as it was.
func TestWithMaxLength(t *testing.T) {
	enc, ctx := &models.Embedder{MaxLength: 64}, &models.Embedder{MaxLength: 64}
	s := &evaluate.Session{Model: "m", Enc: enc, Context: ctx, Sep: " [SEP] ", Batch: 8}
	r := WithMaxLength(s, 128)
	if r == s || r.Model != "m" || r.Sep != " [SEP] " || r.Batch != 8 || r.ResponseEnc != nil {
		t.Fatalf("resized session %+v lost the original's settings", r)
	}
	for name, e := range map[string]evaluate.Encoder{"Enc": r.Enc, "Context": r.Context} {
		if m := e.(*models.Embedder); m.MaxLength != 128 {
			t.Errorf("%s cuts at %d, want 128", name, m.MaxLength)
		}
	}
	if enc.MaxLength != 64 || ctx.MaxLength != 64 {
		t.Errorf("the original encoders changed: %d, %d", enc.MaxLength, ctx.MaxLength)
	}
}
