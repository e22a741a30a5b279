package sets

import (
	"archive/zip"
	"os"
	"path/filepath"
	"testing"

	"convrep/evaluate"
)

// FuzzReaders feeds every evaluation-set reader and the split files arbitrary bytes, the reader chosen by
// kind; the zipped sets (MultiWOZ, ToDDAPT's unified data.zip) get the bytes as their archive's member. None may panic or hang.
//
//	go test -run XXX -fuzz FuzzReaders -fuzztime 60s ./evaluate/sets
func FuzzReaders(f *testing.F) {
	f.Add(uint8(0), []byte(`{"train": [["book a table", "restaurant"]], "val": [], "test": [["hi", "greet"]], "oos_train": [], "oos_val": [], "oos_test": [["x", "oos"]]}`))
	f.Add(uint8(1), []byte(`[["book a table", "restaurant"], ["play", "music"]]`))
	f.Add(uint8(2), []byte("text,label\nbook a table,restaurant\n"))
	f.Add(uint8(3), []byte("{\"text\": \"hi\", \"label\": \"greet\"}\n"))
	f.Add(uint8(4), []byte("{'question': 'is it good?', 'answer': 'yes'}\n"))
	f.Add(uint8(5), []byte(`[{"dialogue_id": "d", "turns": [{"system_utterance": {"text": "hi", "tokens": ["hi"]}, "user_utterance": {"text": "yo", "tokens": ["yo"]}, "system_acts": [{"type": "GREETING"}]}]}]`))
	f.Add(uint8(6), []byte("1 2 -\n0 3 -\n"))
	f.Add(uint8(7), []byte("inform(food=thai)\nthai food is served\n\n"))
	f.Add(uint8(8), []byte(`{"task": "intent", "dataset": "d", "rows": 2, "k": 1, "seed": 0, "support": [{"label": "a", "rows": [0]}]}`))
	f.Add(uint8(9), []byte(`{"task": "response", "dataset": "d", "rows": 3, "size": 2, "seed": 0, "candidates": [{"query": 0, "rows": [0, 1]}]}`))
	f.Add(uint8(10), []byte(`{"d1.json": {"log": [{"text": "i need a hotel", "dialog_act": {}}, {"text": "which area?", "dialog_act": {"Hotel-Request": [["Area", "?"]]}}]}}`))
	f.Add(uint8(11), []byte(`[{"dialogue_id": "sim-M-1", "domains": ["movie"], "turns": [{"speaker": "user", "utterance": "hi", "dialogue_act": {}}]}]`))
	train := evaluate.Split{{Text: "a", Label: "x"}, {Text: "b", Label: "y"}}
	// zipped writes data as the one member of a zip archive at name, as MultiWOZ and ToDDAPT ship their JSON.
	zipped := func(t *testing.T, name, member string, data []byte) string {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		w := zip.NewWriter(out)
		m, err := w.Create(member)
		if err == nil {
			_, err = m.Write(data)
		}
		if err == nil {
			err = w.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		dir := t.TempDir()
		write := func(name string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		var err error
		switch kind % 12 {
		case 0:
			_, err = ReadCLINC150(write("data_full.json"))
		case 1:
			_, err = ReadSNIPS(write("snips_train.json"))
		case 2:
			_, err = ReadUserFile(write("u.csv"), "text", "label")
		case 3:
			_, err = ReadUserFile(write("u.jsonl"), "text", "label")
		case 4:
			_, err = ReadAmazonQA(write("qa.json"))
		case 5:
			_, err = readGSIMFile(write("train.json"))
		case 6:
			_, err = readUbuntuLinks(string(data), 5, "log")
		case 7:
			_, err = parseDSTC2Pairs(write("train_data"), string(data))
		case 8:
			_, err = evaluate.ReadSupportFile(write("split.json"), train)
		case 9:
			_, err = evaluate.ReadCandidateFile(write("split.json"), 3)
		case 10:
			zipped(t, multiwozPath(dir, "val"), "val.json", data)
			_, err = readMultiWOZ(dir, "val")
		case 11:
			_, err = readM2MZip(zipped(t, filepath.Join(dir, "data.zip"), "data.json", data))
		}
		_ = err
	})
}
