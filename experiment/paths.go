package experiment

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"convrep/internal/shared"
)

// The path rule: every relative path in an experiment file is taken from the file's folder, as docker-compose
// and Cargo do, whether the file or a --set names it; a path may start with ${CONVREP_SHARED} (or
// $CONVREP_SHARED), the shared folder (internal/shared). Load resolves the paths once: the fields then hold
// them resolved, and writtenPaths keeps them as the file wrote them, for the digest.

// objectivePaths are the [objective] settings that are paths (MGT's run of the single dual encoder).
var objectivePaths = []string{"segment_encoder"}

// writtenPaths are an experiment's paths as its file (and --set) wrote them.
type writtenPaths struct {
	backbone, tokenizer, root string
	files                     []string
	objective                 map[string]string // the objectivePaths that are set
}

// sharedPrefixes are the spellings of the shared folder at the start of a path.
var sharedPrefixes = []string{"${" + shared.Env + "}", "$" + shared.Env}

// resolvePaths applies the path rule to every path of the experiment read from the file at path, fills the
// defaults that depend on it (output_dir: runs/NAME beside the file; data.cache_dir: cache beside output_dir's
// folder), and keeps the written forms for the digest. sharedDir is called only for a path that names it.
func (e *Experiment) resolvePaths(path string, sharedDir func() (string, error)) error {
	dir := filepath.Dir(path)
	w := writtenPaths{backbone: e.Model.Backbone, tokenizer: e.Model.Tokenizer, root: e.Data.Root,
		files: e.Data.Files, objective: map[string]string{}}
	var errs []string
	resolve := func(key string, p *string) {
		r, err := resolvePath(dir, *p, sharedDir)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %q: %v", key, *p, err))
			return
		}
		*p = r
	}
	if e.OutputDir == "" && e.Name != "" {
		e.OutputDir = filepath.Join("runs", e.Name)
	}
	resolve("output_dir", &e.OutputDir)
	if e.Model.Backbone != "" && isPath(dir, e.Model.Backbone) {
		resolve("model.backbone", &e.Model.Backbone)
	}
	resolve("model.tokenizer", &e.Model.Tokenizer)
	resolve("data.root", &e.Data.Root)
	if e.Data.CacheDir == "" && e.OutputDir != "" {
		e.Data.CacheDir = filepath.Join(filepath.Dir(e.OutputDir), "cache")
	} else {
		resolve("data.cache_dir", &e.Data.CacheDir)
	}
	e.Data.Files = make([]string, len(w.files))
	for i, f := range w.files {
		e.Data.Files[i] = f
		resolve(fmt.Sprintf("data.files[%d]", i), &e.Data.Files[i])
	}
	if len(w.files) == 0 {
		e.Data.Files = w.files // nil stays nil: the digest's JSON leaves it out
	}
	if e.Objective != nil {
		e.Objective = maps.Clone(e.Objective)
		for _, k := range objectivePaths {
			p, ok := e.Objective[k].(string)
			if !ok {
				continue // unset, or not a string: the objective reports that
			}
			w.objective[k] = p
			resolve("objective."+k, &p)
			e.Objective[k] = p
		}
	}
	e.written = &w
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// resolvePath is p taken from dir, cleaned: "" stays "", an absolute path stays as it is, a leading ~/ is the
// home folder, and a leading ${CONVREP_SHARED} or $CONVREP_SHARED is the shared folder. Any other $ at the
// start is refused, as a misspelling (no other variable is expanded).
func resolvePath(dir, p string, sharedDir func() (string, error)) (string, error) {
	if p == "" {
		return "", nil
	}
	if rest, ok := cutShared(p); ok {
		d, err := sharedDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(d, rest), nil
	}
	if strings.HasPrefix(p, "$") {
		return "", fmt.Errorf("only ${%s} is expanded in a path", shared.Env)
	}
	if rest, ok := strings.CutPrefix(p, "~"); ok && (rest == "" || rest[0] == '/') {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, rest), nil
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	return filepath.Join(dir, p), nil
}

// cutShared is p without its leading shared-folder variable, ok false when p does not start with one.
func cutShared(p string) (rest string, ok bool) {
	for _, pre := range sharedPrefixes {
		if rest, ok := strings.CutPrefix(p, pre); ok && (rest == "" || rest[0] == '/' || rest[0] == filepath.Separator) {
			return rest, true
		}
	}
	return "", false
}

// isPath says whether model.backbone names a folder rather than a hub model ("bert-base-uncased",
// "org/name"): it starts with ., / or ~ or the shared folder, has more than one /, or names something in the
// experiment file's folder dir.
func isPath(dir, backbone string) bool {
	if _, ok := cutShared(backbone); ok || strings.HasPrefix(backbone, "$") {
		return true
	}
	if strings.HasPrefix(backbone, ".") || strings.HasPrefix(backbone, "~") || filepath.IsAbs(backbone) ||
		strings.Count(backbone, "/") > 1 {
		return true
	}
	_, err := os.Stat(filepath.Join(dir, backbone))
	return err == nil
}

// digestSpelling is a written path as the digest holds it: as written, but in the spelling the shipped
// experiments had before paths were read from the file's folder, so that their digests (and the checkpoints
// of their runs) stay: ${CONVREP_SHARED} as ../shared, and, in the keys that were then read from the working
// directory (all but data.files; fromWorkDir), ../runs/ as runs/.
func digestSpelling(p string, fromWorkDir bool) string {
	if rest, ok := cutShared(p); ok {
		return "../shared" + filepath.ToSlash(rest)
	}
	if fromWorkDir {
		if rest, ok := strings.CutPrefix(p, "../runs/"); ok {
			return "runs/" + rest
		}
	}
	return p
}
