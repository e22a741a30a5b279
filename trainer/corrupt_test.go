package trainer_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convrep/checkpoint"
	"convrep/rundir"
	"convrep/safetensors"
	"convrep/trainer/trainertest"
)

// TestResumeRefusesCorruptCheckpoint damages the only checkpoint of a run in ways a crash, a full disk or a
// bad copy could, and wants --resume to fail naming the file and the damage, leaving the file as it is (no
// repair, nothing new written). With an older checkpoint beside it, --resume falls back to that one
// (TestResumeFallsBackToThePreviousCheckpoint).
func TestResumeRefusesCorruptCheckpoint(t *testing.T) {
	exp, out := finishedRun(t)
	good, err := os.ReadFile(rundir.At(out).CheckpointPath(3))
	if err != nil {
		t.Fatal(err)
	}
	hdrLen := binary.LittleEndian.Uint64(good)
	header := func(b []byte) []byte { return b[8 : 8+hdrLen] }
	// replaceIn edits the JSON header in place, keeping its length (so every offset stays valid).
	replaceIn := func(after, old, new string) func([]byte) []byte {
		return func(b []byte) []byte {
			h := header(b)
			from := bytes.Index(h, []byte(after))
			i := bytes.Index(h[max(from, 0):], []byte(old))
			if from < 0 || i < 0 || len(old) != len(new) {
				t.Fatalf("checkpoint header has no %q after %q", old, after)
			}
			copy(h[from+i:], new)
			return b
		}
	}
	// resigned makes an edit's checksum match the edited tensors, as a buggy writer's file would, so that the
	// checks behind the checksum are reached.
	resigned := func(edit func([]byte) []byte) func([]byte) []byte {
		return func(b []byte) []byte {
			b = edit(b)
			f, err := safetensors.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			var m checkpoint.Meta
			if err := json.Unmarshal([]byte(f.Metadata["convrep"]), &m); err != nil {
				t.Fatal(err)
			}
			return bytes.Replace(b, []byte(m.Checksum), []byte(checkpoint.Checksum(f.Tensors)), 1)
		}
	}
	for _, tc := range []struct {
		name    string
		corrupt func([]byte) []byte
		want    string
	}{
		{"empty", func(b []byte) []byte { return nil }, "truncated"},
		{"one data bit flipped", func(b []byte) []byte { b[len(b)-100] ^= 0x10; return b }, "does not match its checksum"},
		{"cut in the length prefix", func(b []byte) []byte { return b[:5] }, "truncated"},
		{"cut in the header", func(b []byte) []byte { return b[:8+hdrLen/2] }, "truncated"},
		{"cut in the data", func(b []byte) []byte { return b[:len(b)/2] }, "offsets"},
		{"last byte missing", func(b []byte) []byte { return b[:len(b)-1] }, "offsets"},
		{"huge header length", func(b []byte) []byte { b[7] = 0x7f; return b }, "header too large"},
		{"header not JSON", func(b []byte) []byte { b[8] = '['; return b }, "invalid header"},
		{"zeroed header", func(b []byte) []byte { clear(b[8+hdrLen/3 : 8+hdrLen/2]); return b }, "invalid header"},
		{"other format", replaceIn("", checkpoint.FormatName, "convrep-checkpoint-9"), `format "convrep-checkpoint-9"`},
		{"metadata not JSON", replaceIn("", `{\"format\"`, `[\"format\"`), "metadata"},
		{"offsets swapped", replaceIn(`"rng/cpu"`, `"data_offsets":[`, `"data_offsets":{`), "invalid header"},
		{"parameter shape transposed", resigned(replaceIn(`"param/bert.embeddings.word_embeddings.weight"`, "[30522,32]", "[32,30522]")),
			"bert.embeddings.word_embeddings.weight"},
		{"parameter dtype changed", resigned(replaceIn(`"param/bert.embeddings.word_embeddings.weight"`, `"F32"`, `"I32"`)),
			"bert.embeddings.word_embeddings.weight"},
		{"moment dtype changed", resigned(replaceIn(`"optim/bert.embeddings.word_embeddings.weight.exp_avg"`, `"F32"`, `"I32"`)),
			"bert.embeddings.word_embeddings.weight.exp_avg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			moved := trainertest.CopyRun(t, out)
			if err := os.Remove(rundir.At(moved).CheckpointPath(2)); err != nil {
				t.Fatal(err)
			}
			path := rundir.At(moved).CheckpointPath(3)
			bad := tc.corrupt(bytes.Clone(good))
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			before := trainertest.HashFiles(t, rundir.At(moved).CheckpointDir())
			_, err := trainertest.New(t, exp, []string{"output_dir=" + quote(moved)}, true)
			if err == nil {
				t.Fatalf("resume from a checkpoint %s succeeded", tc.name)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to name %s and %q", err, filepath.Base(path), tc.want)
			}
			if !trainertest.SameHashes(before, trainertest.HashFiles(t, rundir.At(moved).CheckpointDir())) {
				t.Error("the failed resume changed the checkpoints")
			}
		})
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }
