package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convrep/internal/shared"
)

// sharedAt is a sharedDir that gives dir.
func sharedAt(dir string) func() (string, error) { return func() (string, error) { return dir, nil } }

// The path rule on each key: a relative path is taken from the experiment file's folder, an absolute one
// stays, ${CONVREP_SHARED} and $CONVREP_SHARED are the shared folder, a hub name stays a hub name, and a --set
// value follows the same rule.
func TestPathRule(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	const sh = "/srv/shared"
	for _, c := range []struct {
		key, value string
		inFolder   string // a folder made beside the file first ("" for none)
		want       func(dir string) string
		err        string
	}{
		{key: "output_dir", value: "../runs/x", want: func(d string) string { return filepath.Join(filepath.Dir(d), "runs", "x") }},
		{key: "output_dir", value: "/abs/out/", want: func(string) string { return "/abs/out" }},
		{key: "model.tokenizer", value: "tok", want: func(d string) string { return filepath.Join(d, "tok") }},
		{key: "model.tokenizer", value: "${CONVREP_SHARED}/data/vocab", want: func(string) string { return sh + "/data/vocab" }},
		{key: "model.tokenizer", value: "$CONVREP_SHARED/data/vocab", want: func(string) string { return sh + "/data/vocab" }},
		{key: "model.tokenizer", value: "~/vocab", want: func(string) string { return filepath.Join(home, "vocab") }},
		{key: "model.tokenizer", value: "${CONVREP_SHARE}/data/vocab", err: `model.tokenizer "${CONVREP_SHARE}/data/vocab": only ${CONVREP_SHARED} is expanded`},
		{key: "model.tokenizer", value: "$CONVREP_SHAREDX/vocab", err: "only ${CONVREP_SHARED} is expanded"},
		{key: "data.root", value: "data", want: func(d string) string { return filepath.Join(d, "data") }},
		{key: "data.root", value: "${CONVREP_SHARED}", want: func(string) string { return sh }},
		{key: "data.cache_dir", value: "../cache", want: func(d string) string { return filepath.Join(filepath.Dir(d), "cache") }},
		{key: "model.backbone", value: "bert-base-uncased", want: func(string) string { return "bert-base-uncased" }},
		{key: "model.backbone", value: "org/model", want: func(string) string { return "org/model" }},
		{key: "model.backbone", value: "mine", inFolder: "mine", want: func(d string) string { return filepath.Join(d, "mine") }},
		{key: "model.backbone", value: "../runs/a/model", want: func(d string) string { return filepath.Join(filepath.Dir(d), "runs", "a", "model") }},
		{key: "model.backbone", value: "runs/a/model", want: func(d string) string { return filepath.Join(d, "runs", "a", "model") }},
		{key: "model.backbone", value: "./m", want: func(d string) string { return filepath.Join(d, "m") }},
		{key: "model.backbone", value: "${CONVREP_SHARED}/models/m", want: func(string) string { return sh + "/models/m" }},
	} {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			dir := t.TempDir()
			if c.inFolder != "" {
				if err := os.Mkdir(filepath.Join(dir, c.inFolder), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			body := validExperiment
			if c.key == "model.backbone" { // a pretrained backbone instead of the random one
				body = strings.Replace(body, "[model.random]\narch = \"bert\"\nlayers = 2\nhidden = 32\nheads = 2\nintermediate = 64\nmax_positions = 64\n", "", 1)
			}
			path := writeExperimentIn(t, dir, body)
			for _, how := range []string{"file", "--set"} {
				e, err := decodeExperiment(path, []byte(body))
				if err != nil {
					t.Fatal(err)
				}
				// The file's line, or the same key given with --set: both are keys of the file.
				src := []byte(body)
				if how == "file" {
					src = []byte(setKey(t, body, c.key, c.value))
					if e, err = decodeExperiment(path, src); err != nil {
						t.Fatal(err)
					}
				} else if err := applyOverride(e, path, src, c.key+"="+c.value); err != nil {
					t.Fatal(err)
				}
				e.defaults()
				err = e.resolvePaths(path, sharedAt(sh))
				if c.err != "" {
					if err == nil || !strings.Contains(err.Error(), c.err) {
						t.Errorf("%s: %v, want an error mentioning %q", how, err, c.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if got, want := keyValue(e, c.key), c.want(dir); got != want {
					t.Errorf("%s: %s = %q resolved to %q, want %q", how, c.key, c.value, got, want)
				}
			}
		})
	}
}

// setKey puts key = value into the experiment body: replacing the key's line where it has one, else as the
// first line of its table.
func setKey(t *testing.T, body, key, value string) string {
	t.Helper()
	table, leaf := "", key
	if i := strings.LastIndex(key, "."); i >= 0 {
		table, leaf = key[:i], key[i+1:]
	}
	line := leaf + " = \"" + value + "\"\n"
	if table == "" {
		return line + body
	}
	for _, l := range strings.SplitAfter(body, "\n") {
		if strings.HasPrefix(l, leaf+" = ") {
			return strings.Replace(body, l, line, 1)
		}
	}
	head := "[" + table + "]\n"
	if !strings.Contains(body, head) {
		t.Fatalf("no table %s", head)
	}
	return strings.Replace(body, head, head+line, 1)
}

func keyValue(e *Experiment, key string) string {
	return map[string]string{"output_dir": e.OutputDir, "model.tokenizer": e.Model.Tokenizer, "model.backbone": e.Model.Backbone,
		"data.root": e.Data.Root, "data.cache_dir": e.Data.CacheDir}[key]
}

// output_dir defaults to runs/NAME beside the file, data.cache_dir to cache beside output_dir's folder (so the
// shipped experiments, with output_dir ../runs/NAME, share <repo>/runs/cache); data.files and MGT's
// objective.segment_encoder follow the rule; an experiment path relative to the working directory gives paths
// relative to it.
func TestPathDefaults(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("exps", 0o755); err != nil {
		t.Fatal(err)
	}
	path := writeExperimentIn(t, "exps", validExperiment)
	e, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("exps", "runs", "t"); e.OutputDir != want {
		t.Errorf("output_dir %q, want %q", e.OutputDir, want)
	}
	if want := filepath.Join("exps", "runs", "cache"); e.Data.CacheDir != want {
		t.Errorf("data.cache_dir %q, want %q", e.Data.CacheDir, want)
	}
	e, err = Load(path, []string{"output_dir=../runs/t", `data.files=["a.csv", "/abs/b.csv"]`})
	if err != nil {
		t.Fatal(err)
	}
	if e.OutputDir != filepath.Join("runs", "t") || e.Data.CacheDir != filepath.Join("runs", "cache") {
		t.Errorf("output_dir %q, data.cache_dir %q; want runs/t and runs/cache", e.OutputDir, e.Data.CacheDir)
	}
	if fs := e.Data.FileSet(); fs == nil || strings.Join(fs.Paths, " ") != "exps/a.csv /abs/b.csv" {
		t.Errorf("data.files %v, want exps/a.csv and /abs/b.csv", fs)
	}
	mgt := strings.Replace(validExperiment, "name = \"dse\"\ntemperature = 0.05\n", "name = \"mgt\"\nsegment = 1\nsegment_encoder = \"../runs/single\"\n", 1)
	e, err = Load(writeExperimentIn(t, "exps", mgt), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Objective["segment_encoder"]; got != filepath.Join("runs", "single") {
		t.Errorf("objective.segment_encoder %q, want runs/single", got)
	}
}

// ${CONVREP_SHARED} is the variable's folder when it is set; unset, ../shared from the working directory;
// where there is neither, loading fails naming the key and saying to set the variable.
func TestSharedVariable(t *testing.T) {
	body := strings.Replace(validExperiment, `root = "data"`, `root = "${CONVREP_SHARED}/data/pretrain"`, 1)
	path := writeExperiment(t, body)

	mine := t.TempDir()
	t.Setenv(shared.Env, mine)
	e, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(mine, "data", "pretrain"); e.Data.Root != want {
		t.Errorf("set: data.root %q, want %q", e.Data.Root, want)
	}

	t.Setenv(shared.Env, "")
	clone := t.TempDir()
	for _, d := range []string{"repo", "shared"} {
		if err := os.Mkdir(filepath.Join(clone, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(filepath.Join(clone, "repo"))
	if e, err = Load(path, nil); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(clone, "shared", "data", "pretrain"); e.Data.Root != want {
		t.Errorf("unset, ../shared beside: data.root %q, want %q", e.Data.Root, want)
	}

	t.Chdir(t.TempDir())
	_, err = Load(path, nil)
	if err == nil || !strings.Contains(err.Error(), `data.root "${CONVREP_SHARED}/data/pretrain"`) || !strings.Contains(err.Error(), "set CONVREP_SHARED") {
		t.Errorf("unset, no ../shared: %v, want an error naming data.root and CONVREP_SHARED", err)
	}
}

// A shipped experiment copied into a folder of the user's, with its example data beside it, loads there with
// CONVREP_SHARED set, from another working directory, and every path it resolves exists (output_dir and the
// cache are made by the run: their folder is the copy's).
func TestShippedExperimentCopiedElsewhere(t *testing.T) {
	t.Setenv(shared.Env, shared.MustPath(t))
	src, err := os.ReadFile(filepath.Join("..", "experiments", "dse_own_data_mini_cpu.toml"))
	if err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(filepath.Join("..", "examples", "own-dialogues", "support.csv"))
	if err != nil {
		t.Fatal(err)
	}
	mine := t.TempDir()
	if err := os.WriteFile(filepath.Join(mine, "support.csv"), csv, 0o644); err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(src), `"../examples/own-dialogues/support.csv"`, `"support.csv"`, 1)
	if body == string(src) {
		t.Fatal("the experiment no longer names ../examples/own-dialogues/support.csv")
	}
	path := filepath.Join(mine, "dse_support.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	e, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append([]string{e.Model.Backbone}, e.Data.Files...) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("resolved path: %v", err)
		}
	}
	if want := filepath.Join(filepath.Dir(mine), "runs", "dse_own_data_mini_cpu"); e.OutputDir != want {
		t.Errorf("output_dir %q, want %q", e.OutputDir, want)
	}
	if want := filepath.Join(filepath.Dir(mine), "runs", "cache"); e.Data.CacheDir != want {
		t.Errorf("data.cache_dir %q, want %q", e.Data.CacheDir, want)
	}
}

// Every shipped experiment loads from the repository's root as the Makefile and the scripts run it: its runs
// land in runs/, and every path it reads that no earlier run makes (the shared folder's models, vocabularies
// and corpora, the examples) exists.
func TestShippedExperimentPaths(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "experiments", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no experiments (%v)", err)
	}
	t.Chdir("..")
	for _, f := range files {
		path := filepath.Join("experiments", filepath.Base(f))
		e, err := Load(path, nil)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if e.OutputDir != filepath.Join("runs", e.Name) || e.Data.CacheDir != filepath.Join("runs", "cache") {
			t.Errorf("%s: output_dir %q, data.cache_dir %q; want runs/%s and runs/cache", path, e.OutputDir, e.Data.CacheDir, e.Name)
		}
		read := append([]string{e.Model.Tokenizer, e.Data.Root}, e.Data.Files...)
		if e.Model.Random == nil && isPath("experiments", e.Model.Backbone) {
			read = append(read, e.Model.Backbone)
		}
		for _, p := range read {
			if p == "" || strings.HasPrefix(p, "runs"+string(filepath.Separator)) {
				continue // a folder an earlier run writes (its model, MGT's single dual encoder)
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
	}
}

// The digests of the shipped experiments are those they had before paths were read from the file's folder
// (pinned at commit 171a21e, when they wrote ../shared and runs/ for what they now write ${CONVREP_SHARED} and
// ../runs/), so the checkpoints of their runs still resume and evaluate. So are those of the claims' --set
// values, which scripts/claims.sh now writes from the experiment's folder.
func TestShippedDigestsStay(t *testing.T) {
	t.Chdir("..")
	for file, want := range shippedDigests {
		e, err := Load(filepath.Join("experiments", file), nil)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if d := e.Digest(); d != want {
			t.Errorf("%s: digest %s, want %s", file, d, want)
		}
	}
	files, _ := filepath.Glob(filepath.Join("experiments", "*.toml"))
	if len(files) != len(shippedDigests) {
		t.Errorf("%d experiments, %d digests pinned: pin the new one's", len(files), len(shippedDigests))
	}
	for _, c := range []struct {
		file string
		set  []string
		want string
	}{
		{"mgt_mini_cpu.toml", []string{"objective.segment_encoder=../runs/claims/mgt/train/single"}, "e6166cda4618e4ac"},
		{"dse_mini_cpu.toml", []string{"output_dir=../runs/claims/dse/train/dse/s1", "seed=1"}, "c212faf03161c3a9"},
	} {
		e, err := Load(filepath.Join("experiments", c.file), c.set)
		if err != nil {
			t.Fatal(err)
		}
		if d := e.Digest(); d != c.want {
			t.Errorf("%s %v: digest %s, want %s", c.file, c.set, d, c.want)
		}
	}
}

// shippedDigests are the experiments' digests at commit 171a21e.
var shippedDigests = map[string]string{
	"dialoguecse_all_layers_mini_cpu.toml": "de893eb111c9e747",
	"dialoguecse_bert_base.toml":           "74870a5b7824ae2a",
	"dialoguecse_i1_mini_cpu.toml":         "c62e4e3619f0ebbc",
	"dialoguecse_i2_mini_cpu.toml":         "160cdc2d96f38cec",
	"dialoguecse_mlm_bert_base.toml":       "2084322f75ab9db3",
	"dialoguecse_mlm_small_cpu.toml":       "99bdbcacaf893a4e",
	"dialoguecse_msr_mini_cpu.toml":        "1b3f8619701e2631",
	"dialoguecse_small_cpu.toml":           "d1ce0ffd02729ab3",
	"dse123_1_bert_base.toml":              "dc0886771178de70",
	"dse2_1_bert_base.toml":                "c34776c9a0259812",
	"dse3_1_bert_base.toml":                "659679f5c18a457d",
	"dse_bert_base.toml":                   "34800917f34adc5c",
	"dse_bert_large.toml":                  "01dd1c9380b273e5",
	"dse_distilbert_base.toml":             "e71e14eca0008a04",
	"dse_dropout_bert_base.toml":           "5fb5d2b89afe99e7",
	"dse_mini_cpu.toml":                    "c212faf03161c3a9",
	"dse_own_chat_mini_cpu.toml":           "8ba61f799a7f9754",
	"dse_own_data_mini_cpu.toml":           "b32d73c0e94ef93f",
	"dse_roberta_base.toml":                "1275d337f33e1b73",
	"dse_small_cpu.toml":                   "b4cfb424a1b9d8b8",
	"futuretod_bert_base.toml":             "47d24b454213ea84",
	"futuretod_ctx128_mini_cpu.toml":       "3e975b9727228b80",
	"futuretod_mini_cpu.toml":              "df06031050150818",
	"futuretod_small_cpu.toml":             "f6774674d9708e67",
	"futuretod_w_mini_cpu.toml":            "140bc5e8a29e207c",
	"mgt_bert_base.toml":                   "219bbd99a2384888",
	"mgt_ensemble_bert_base.toml":          "2db73b6494bac1c8",
	"mgt_ensemble_mini_cpu.toml":           "6cd7a790cfdc8fe1",
	"mgt_ensemble_small_cpu.toml":          "1f4614849b05404a",
	"mgt_mini_cpu.toml":                    "5795697e0e47cf6a",
	"mgt_neardup_centred_mini_cpu.toml":    "685d2ac399b5eee1",
	"mgt_neardup_mini_cpu.toml":            "f46280780bb94da5",
	"mgt_single_bert_base.toml":            "7931ca0bbb222fed",
	"mgt_single_mini_cpu.toml":             "866f9a184eb8af6c",
	"mgt_single_small_cpu.toml":            "aecd4ddee77ccbfe",
	"mgt_small_cpu.toml":                   "f4971a0812defaec",
	"minibert_mlm_cpu.toml":                "f52ad44b3a1c1b19",
	"mlm_bert_base.toml":                   "358c8fa97f73e98f",
	"mlm_mini_cpu.toml":                    "ca8fb050b3495e7b",
	"mlm_small_cpu.toml":                   "c3c4d55c7ea22815",
	"simcse_bert_base.toml":                "95edfc01bb1d82ca",
	"simcse_mini_cpu.toml":                 "8dd7d777f52da123",
	"simcse_small_cpu.toml":                "f5e14f215ea18b03",
	"todbert_rcl_bert_base.toml":           "d12bac740598cc55",
	"todbert_rcl_mini_cpu.toml":            "45d5f507f32bb7da",
	"todbert_rcl_small_cpu.toml":           "54f6d139a87e50de",
}
