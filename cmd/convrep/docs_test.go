package main

// The docs do not rot: every command line that README.md and docs/**/*.md show (`go run ./cmd/<x> ...` or
// `convrep <command> ...`, in fenced code blocks and in inline code spans) names a command that exists, its flags
// and arguments parse with the command's own flag sets (parsed only, nothing run), and every repository file it
// names exists; so does every repository path written alone in an inline code span. docs/claims.md has a section
// for every claim of scripts/claims.toml, and every "the X section above" names a heading above it.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"convrep/claims"
)

// goRunChecks are the parse-only checks of the programs under cmd/: convrep and its subcommands.
func goRunChecks() map[string]func([]string) error {
	m := map[string]func([]string) error{"convrep": checkConvrep}
	for _, c := range commands().Entries {
		m[c.Name] = c.Sub.check
	}
	return m
}

// checkConvrep checks a convrep command line (after "convrep"): the subcommand's name by convrep's table, its
// arguments by the subcommand's own check. `convrep` alone names the program: nothing to check.
func checkConvrep(args []string) error {
	if len(args) == 0 {
		return nil
	}
	return commands().Check(args, func(c command, args []string) error { return c.check(args) })
}

// snippet is a piece of code in a Markdown file: a line of a fenced code block (with its continuation lines
// joined), or an inline code span.
type snippet struct {
	line   int // 1-based, where it starts
	text   string
	inline bool
}

var fenceRe = regexp.MustCompile("^ {0,3}(```+|~~~+)")

// snippets returns the code of a Markdown document: every line of its fenced code blocks, lines ending with a
// backslash joined to the next, and every inline code span (which may run over lines of a paragraph).
func snippets(src string) []snippet {
	var out []snippet
	lines := strings.Split(src, "\n")
	fence := "" // the open fence's marker, "" outside a fenced block
	para := -1  // the first line of the paragraph being gathered, -1 when none
	flush := func(end int) {
		if para >= 0 {
			out = append(out, spans(lines[para:end], para+1)...)
		}
		para = -1
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := fenceRe.FindStringSubmatch(l); m != nil {
			switch {
			case fence == "":
				flush(i)
				fence = m[1]
				continue
			case m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(l[strings.Index(l, m[1])+len(m[1]):]) == "":
				fence = ""
				continue
			}
		}
		if fence != "" {
			start := i
			text := l
			for strings.HasSuffix(text, "\\") && i+1 < len(lines) {
				i++
				text = strings.TrimRight(strings.TrimSuffix(text, "\\"), " \t") + " " + strings.TrimSpace(lines[i])
			}
			out = append(out, snippet{line: start + 1, text: strings.TrimSpace(text)})
			continue
		}
		if strings.TrimSpace(l) == "" {
			flush(i)
		} else if para < 0 {
			para = i
		}
	}
	flush(len(lines))
	return out
}

// spans returns the inline code spans of a paragraph whose first line is line number first: text between
// matching runs of backticks, newlines read as spaces.
func spans(lines []string, first int) []snippet {
	text := strings.Join(lines, "\n")
	var out []snippet
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(text) && text[i+n] == '`' {
			n++
		}
		open := i
		i += n
		for j := i; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(text) && text[j+m] == '`' {
				m++
			}
			if m == n {
				code := strings.TrimSpace(strings.ReplaceAll(text[i:j], "\n", " "))
				out = append(out, snippet{line: first + strings.Count(text[:open], "\n"), text: code, inline: true})
				i = j + m
				break
			}
			j += m
		}
	}
	return out
}

// commandRe recognises a command line: an optional prompt, environment assignments, then go run or convrep.
var commandRe = regexp.MustCompile(`^(?:\$\s+)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:go\s+run\s|convrep(?:\s|$))`)

// commandLine reads a snippet as a command line: the program ("convrep", or the X of go run ./cmd/X) and its
// arguments; ok is false for anything else (make, go test, python3, prose).
func commandLine(text string) (prog string, args []string, ok bool, err error) {
	if !commandRe.MatchString(text) {
		return "", nil, false, nil
	}
	words, err := splitShell(strings.TrimPrefix(text, "$"))
	if err != nil {
		return "", nil, true, err
	}
	for len(words) > 0 && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(words[0]) {
		words = words[1:]
	}
	if words[0] == "convrep" {
		return "convrep", words[1:], true, nil
	}
	words = words[2:] // go run
	for len(words) > 0 && strings.HasPrefix(words[0], "-") {
		words = words[1:] // go run's own flags
	}
	if len(words) == 0 || !strings.HasPrefix(words[0], "./cmd/") {
		return "", nil, true, fmt.Errorf("go run of no ./cmd/ program")
	}
	return strings.TrimSuffix(strings.TrimPrefix(words[0], "./cmd/"), "/"), words[1:], true, nil
}

// splitShell splits a command line into words as a POSIX shell does: single and double quotes, backslash
// escapes, a comment from an unquoted # that starts a word; the command ends at an unquoted |, &, ;, < or >
// (a pipe, a redirection: what follows is not an argument).
func splitShell(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '#' && !inWord:
			end()
			return words, nil
		case c == '<' && placeholderRe.MatchString(s[i:]):
			p := placeholderRe.FindString(s[i:]) // <model>: a placeholder, not a redirection
			w.WriteString(p)
			inWord, i = true, i+len(p)-1
		case strings.IndexByte("|&;<>", c) >= 0:
			if inWord && c == '>' && (w.String() == "2" || w.String() == "1") {
				w.Reset()
				inWord = false // 2> file: the descriptor is not an argument
			}
			end()
			return words, nil
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			w.WriteString(s[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(s) {
					return nil, errors.New("unterminated double quote")
				}
				if s[i] == '"' {
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	end()
	return words, nil
}

// placeholderRe is a placeholder the reader fills in: <model>, <dir>/x.toml.
var placeholderRe = regexp.MustCompile(`^<[A-Za-z][\w .:-]*>`)

// placeholder reports whether a word stands for something the reader fills in: it holds a <placeholder> or a
// path element in capitals (cmd/X, DIR/x.toml: no file of the repository is named so), or is ... (more of the
// same). Such words are not checked as paths.
func placeholder(w string) bool {
	if strings.ContainsAny(w, "<>") || w == "..." || w == "…" {
		return true
	}
	for _, e := range strings.Split(w, "/") {
		if capitalsRe.MatchString(e) {
			return true
		}
	}
	return false
}

var capitalsRe = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// forParsing makes a documented command line parseable: ... is dropped, and each <placeholder> becomes "1", a
// valid value for any flag, string or number, and a positional argument like any other.
func forParsing(args []string) []string {
	var out []string
	for _, a := range args {
		if a == "..." || a == "…" {
			continue
		}
		out = append(out, regexp.MustCompile(`<[^<>]*>`).ReplaceAllString(a, "1"))
	}
	return out
}

// checkPath checks that a path a document names exists, when it is a repository path: relative, its first
// element a file or folder of the repository (other relative paths are outputs a command makes, such as
// dialogues.jsonl or out/x.json), not under runs/ (made by running), or under ../shared when there is one
// beside the repository. A path with * must match a file.
func checkPath(root, p string) error {
	if p == "" || placeholder(p) || strings.ContainsAny(p, "$~=,") || filepath.IsAbs(p) || strings.Contains(p, "://") {
		return nil
	}
	clean := filepath.ToSlash(filepath.Clean(p))
	first, _, nested := strings.Cut(clean, "/")
	switch {
	case first == "..":
		if !strings.HasPrefix(clean, "../shared/") {
			return nil
		}
		if _, err := os.Stat(filepath.Join(root, "..", "shared")); err != nil {
			return nil // no ../shared here: nothing to check against
		}
	case !nested && !strings.ContainsRune(p, '/'):
		return nil // a bare name: an output, or a name the text explains
	case first == "runs":
		return nil
	default:
		if _, err := os.Stat(filepath.Join(root, first)); err != nil {
			return nil
		}
	}
	full := filepath.Join(root, filepath.FromSlash(clean))
	if dir, ok := strings.CutSuffix(clean, "/..."); ok { // a Go package pattern: the folder and all under it
		full = filepath.Join(root, filepath.FromSlash(dir))
	}
	if strings.ContainsAny(clean, "*?[") {
		if m, _ := filepath.Glob(full); len(m) == 0 {
			return fmt.Errorf("%s matches no file", p)
		}
		return nil
	}
	if _, err := os.Stat(full); err != nil {
		return fmt.Errorf("%s does not exist", p)
	}
	return nil
}

// argPaths are the words of a command line that may name files: arguments, and values given as --flag=value
// (a value after a separate --flag is an argument word too).
func argPaths(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			if _, v, ok := strings.Cut(a, "="); ok {
				out = append(out, v)
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// proseFolders are the folders whose paths are checked where prose names them alone.
var proseFolders = map[string]bool{"experiments": true, "scripts": true, "cmd": true, "docs": true}

// checkSnippet returns what is wrong with a snippet of a document: a command that does not exist or does not
// parse, a path that does not exist. Snippets that are neither are fine.
func checkSnippet(root string, s snippet, checks map[string]func([]string) error) []string {
	prog, args, isCommand, err := commandLine(s.text)
	if !isCommand {
		// A path alone in prose is checked when it is under a folder of what a reader runs or reads: prose also
		// names Go identifiers (internal/torch.Scope) and other repositories' files (DSE's
		// evaluate/run_similarity.py), which a path under the repository's other folders may be.
		first, _, _ := strings.Cut(s.text, "/")
		if s.inline && !strings.ContainsAny(s.text, " \t") && (proseFolders[first] || strings.HasSuffix(s.text, ".toml")) {
			if err := checkPath(root, s.text); err != nil {
				return []string{err.Error()}
			}
		}
		return nil
	}
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	check, ok := checks[prog]
	switch {
	case !ok:
		problems = append(problems, fmt.Sprintf("no program cmd/%s", prog))
	case s.inline && len(args) == 0:
		// `go run ./cmd/x` or `convrep` in prose names the program; it has nothing to parse
	case s.inline && prog == "convrep" && len(args) == 1:
		// `convrep train` in prose names the subcommand
		if _, err := commands().Find(args[0]); err != nil && !slices.Contains([]string{"help", "-h", "--help"}, args[0]) {
			problems = append(problems, err.Error())
		}
	default:
		if err := check(forParsing(args)); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for _, p := range argPaths(args) {
		if err := checkPath(root, p); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// docs lists README.md and the Markdown files under docs/.
func docs(t *testing.T, root string) []string {
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == filepath.Join(root, "docs") {
				return fs.SkipAll
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

func TestDocsCommandsParseAndPathsExist(t *testing.T) {
	root := repoRoot(t)
	checks := goRunChecks()
	commands := 0
	for _, f := range docs(t, root) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, s := range snippets(string(b)) {
			if prog, args, ok, _ := commandLine(s.text); ok {
				commands++
				if testing.Verbose() {
					t.Logf("%s:%d: %s %q", rel, s.line, prog, args)
				}
			}
			for _, p := range checkSnippet(root, s, checks) {
				t.Errorf("%s:%d: %s\n\t%s", rel, s.line, p, s.text)
			}
		}
	}
	if commands == 0 {
		t.Error("README.md and docs/ show no command line: the extraction is broken")
	}
	t.Logf("%d command lines checked", commands)
}

// Every program under cmd/ has a parse-only check, so that the docs' lines that run it are checked.
func TestEveryProgramIsChecked(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(repoRoot(t), "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	checks := goRunChecks()
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" && checks[e.Name()] == nil {
			t.Errorf("cmd/%s has no check in goRunChecks", e.Name())
		}
	}
}

func TestSnippets(t *testing.T) {
	doc := strings.Join([]string{
		"# Title", // 1
		"",        // 2
		"Run `go run ./cmd/data stats` first, then `convrep", // 3
		"train --resume x.toml` (a span over two lines).",    // 4
		"",      // 5
		"```sh", // 6
		"$ go run ./cmd/train experiments/a.toml   # comment", // 7
		"convrep evaluate suite \\",                           // 8
		"  --model m",                                         // 9
		"```",                                                 // 10
		"Literal ``a `b` c`` and an unmatched ` backtick.", // 11
		"~~~",            // 12
		"```not a close", // 13
		"~~~",            // 14
	}, "\n")
	want := []snippet{
		{3, "go run ./cmd/data stats", true},
		{3, "convrep train --resume x.toml", true},
		{7, "$ go run ./cmd/train experiments/a.toml   # comment", false},
		{8, "convrep evaluate suite --model m", false},
		{11, "a `b` c", true},
		{13, "```not a close", false},
	}
	if got := snippets(doc); !slices.Equal(got, want) {
		t.Errorf("snippets:\n got %+v\nwant %+v", got, want)
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		text   string
		prog   string
		args   []string
		isCmd  bool
		errStr string
	}{
		{text: "go run ./cmd/train experiments/a.toml", prog: "train", args: []string{"experiments/a.toml"}, isCmd: true},
		{text: "$ go run ./cmd/train/ --set 'data.corpora=[\"sgd\", \"woz2\"]' x.toml # why", prog: "train",
			args: []string{"--set", `data.corpora=["sgd", "woz2"]`, "x.toml"}, isCmd: true},
		{text: `LIBTORCH=/opt/x CUDA_VISIBLE_DEVICES=0 go run -race ./cmd/bench --device "cuda:0" 2>&1 | tee log`, prog: "bench",
			args: []string{"--device", "cuda:0"}, isCmd: true},
		{text: "convrep evaluate report --output r.md a b > out.txt", prog: "convrep",
			args: []string{"evaluate", "report", "--output", "r.md", "a", "b"}, isCmd: true},
		{text: "convrep", prog: "convrep", isCmd: true},
		{text: `go run ./cmd/claims check --spec "a b\"c"`, prog: "claims", args: []string{"check", "--spec", `a b"c`}, isCmd: true},
		{text: "go run ./cmd/train 'unterminated", isCmd: true, errStr: "unterminated"},
		{text: "make demo"},
		{text: "go test ./cmd/train"},
		{text: "convreport.md"},
		{text: "python3 scripts/bench_pytorch.py --device cuda"},
		{text: "echo go run ./cmd/train"},
	} {
		prog, args, isCmd, err := commandLine(tc.text)
		if isCmd != tc.isCmd || (err != nil) != (tc.errStr != "") || (err != nil && !strings.Contains(err.Error(), tc.errStr)) {
			t.Errorf("%s: command %v, error %v; want %v, %q", tc.text, isCmd, err, tc.isCmd, tc.errStr)
			continue
		}
		if err == nil && (prog != tc.prog || !slices.Equal(args, tc.args)) {
			t.Errorf("%s: %q %q, want %q %q", tc.text, prog, args, tc.prog, tc.args)
		}
	}
}

func TestCheckSnippet(t *testing.T) {
	root := repoRoot(t)
	checks := goRunChecks()
	for _, tc := range []struct {
		s    snippet
		want string // "" for no problem
	}{
		{snippet{1, "go run ./cmd/train experiments/dse_mini_cpu.toml", false}, ""},
		{snippet{1, "convrep train --resume experiments/dse_mini_cpu.toml", false}, ""},
		{snippet{1, "convrep train --nproc-per-node 2 <experiment>.toml", false}, ""},
		{snippet{1, "convrep evaluate suite --model <model> --output-dir runs/eval/x", false}, ""},
		{snippet{1, "convrep evaluate report --output runs/r.md runs/a runs/b ...", false}, ""},
		{snippet{1, "go run ./cmd/data stats --corpora sgd,woz2 --out dialogues.jsonl", false}, "not defined: -out"},
		{snippet{1, "convrep train experiments/no_such_experiment.toml", false}, "experiments/no_such_experiment.toml does not exist"},
		{snippet{1, "go run ./cmd/train --reusme experiments/dse_mini_cpu.toml", false}, "not defined: -reusme"},
		{snippet{1, "go run ./cmd/nosuch --x", false}, "no program cmd/nosuch"},
		{snippet{1, "convrep trian x.toml", false}, `unknown command "trian"`},
		{snippet{1, "convrep evaluate nosuchtask --model m", false}, `unknown task "nosuchtask"`},
		{snippet{1, "convrep claims check --spec scripts/claims.toml", false}, ""},
		{snippet{1, "convrep claims check --spec scripts/nope.toml", false}, "scripts/nope.toml does not exist"},
		{snippet{1, "convrep setup --force", false}, ""},
		{snippet{1, "convrep bench --batch 8 --seq-len x", false}, "invalid value"},
		{snippet{1, "convrep train", false}, "want one experiment file"},
		{snippet{1, "convrep train", true}, ""},
		{snippet{1, "go run ./cmd/data", true}, ""},
		{snippet{1, "convrep data prepare experiments/mgt_mini_cpu.toml --set objective.segment=2", false}, ""},
		{snippet{1, "convrep data prepare", false}, "want 1"},
		{snippet{1, "convrep help train", false}, ""},
		{snippet{1, "experiments/dse_*.toml", true}, ""},
		{snippet{1, "experiments/nope_*.toml", true}, "matches no file"},
		{snippet{1, "scripts/nope.sh", true}, "scripts/nope.sh does not exist"},
		{snippet{1, "out/clinc.json", true}, ""},
		{snippet{1, "runs/dse_mini_cpu/model", true}, ""},
		{snippet{1, "a sentence with experiments/nope.toml", true}, ""},
		{snippet{1, "cmd/data/nope.tsv", true}, "cmd/data/nope.tsv does not exist"},
		{snippet{1, "internal/torch.Scope", true}, ""},
		{snippet{1, "cmd/...", true}, ""},
		{snippet{1, "scripts/nope/...", true}, "scripts/nope/... does not exist"},
		{snippet{1, "cmd/X", true}, ""},
		{snippet{1, "experiments/DIR/x.toml", true}, ""},
		{snippet{1, "cmd/x", true}, "cmd/x does not exist"},
		{snippet{1, "evaluate/run_similarity.py", true}, ""},
		{snippet{1, "go run ./cmd/bench > out.json", false}, ""},
		{snippet{1, "convrep evaluate intent --model <model dir> --shots <k> --output out/x.json", false}, ""},
		{snippet{1, "convrep bench --batch <n>", false}, ""},
	} {
		got := strings.Join(checkSnippet(root, tc.s, checks), "; ")
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%q (inline %v): %q, want %q", tc.s.text, tc.s.inline, got, tc.want)
		}
	}
}

// heading is a Markdown ATX heading: "### DSE Tables 2-4: ..." is level 3, text "DSE Tables 2-4: ...".
type heading struct {
	line  int // 1-based
	level int
	text  string
}

var headingRe = regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$`)

// headings returns the ATX headings of a Markdown document, outside its fenced code blocks (where a # line is
// a shell comment).
func headings(src string) []heading {
	var out []heading
	fence := ""
	for i, l := range strings.Split(src, "\n") {
		if m := fenceRe.FindStringSubmatch(l); m != nil {
			if fence == "" {
				fence = m[1]
			} else if m[1][0] == fence[0] && len(m[1]) >= len(fence) {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := headingRe.FindStringSubmatch(l); m != nil {
			out = append(out, heading{line: i + 1, level: len(m[1]), text: m[2]})
		}
	}
	return out
}

// section returns the lines of the section under hs[i]: up to the next heading of its level or above.
func section(lines []string, hs []heading, i int) []string {
	end := len(lines)
	for _, h := range hs[i+1:] {
		if h.level <= hs[i].level {
			end = h.line - 1
			break
		}
	}
	return lines[hs[i].line:end]
}

// namesHeading reports whether a reference to "the X section" names heading h: h's text is X, or begins with X
// followed by a space or a colon ("the DSE section" is "### DSE Tables 2-4: ...").
func namesHeading(x string, h heading) bool {
	rest, ok := strings.CutPrefix(h.text, x)
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == ':')
}

// sectionAboveProblems returns, for each "the X section above" of a document (a line break may fall anywhere
// in it), what is wrong when no heading above it is named X (namesHeading).
func sectionAboveProblems(src string) []string {
	hs := headings(src)
	var problems []string
	for _, m := range sectionAboveRe.FindAllStringIndex(src, -1) {
		line := 1 + strings.Count(src[:m[0]], "\n")
		// X is what stands between the nearest "the" before "section above" and it.
		before := src[:m[0]]
		the := theRe.FindAllStringIndex(before, -1)
		if len(the) == 0 {
			problems = append(problems, fmt.Sprintf("line %d: \"section above\" with no \"the X\" before it", line))
			continue
		}
		last := the[len(the)-1]
		x := strings.Join(strings.Fields(before[last[1]:]), " ")
		if x == "" || len(x) > 60 {
			problems = append(problems, fmt.Sprintf("line %d: \"section above\" names no section: %q", line, x))
			continue
		}
		found := false
		for _, h := range hs {
			if h.line < line && namesHeading(x, h) {
				found = true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("line %d: \"the %s section above\": no heading above it is %s or begins with it", line, x, x))
		}
	}
	return problems
}

var (
	sectionAboveRe = regexp.MustCompile(`\s+section\s+above\b`)
	theRe          = regexp.MustCompile(`(?i)\bthe\s+`)
)

// claimSectionProblems returns what docs/claims.md (src) lacks for the claims of scripts/claims.toml:
//   - a paper's claim has a heading (### under "## The claims at small scale") that begins with the first
//     word of the claim's title, the paper's name ("DSE Tables 2, 3 and 4: ..." and "### DSE Tables 2-4: ...
//     partly holds"), and its section holds a table, the claim's;
//   - an ablation (id CLAIM-ablation or CLAIM-ablation-VARIANT) is reported in the section of CLAIM, which
//     names it in code (`CLAIM-ablation`).
func claimSectionProblems(spec *claims.Spec, src string) []string {
	lines := strings.Split(src, "\n")
	hs := headings(src)
	byID := map[string]claims.Claim{}
	for _, c := range spec.Claims {
		byID[c.ID] = c
	}
	// sectionOf is the index in hs of a paper's claim's heading, -1 when there is none.
	sectionOf := func(c claims.Claim) int {
		paper, _, _ := strings.Cut(c.Title, " ")
		under := false
		for i, h := range hs {
			switch {
			case h.level == 2:
				under = h.text == "The claims at small scale"
			case under && h.level == 3 && paper != "" && namesHeading(paper, h):
				return i
			}
		}
		return -1
	}
	var problems []string
	for _, c := range spec.Claims {
		if base, _, ok := strings.Cut(c.ID, "-ablation"); ok {
			b, known := byID[base]
			if !known {
				problems = append(problems, fmt.Sprintf("ablation %q: no claim %q in the spec", c.ID, base))
				continue
			}
			i := sectionOf(b)
			if i < 0 {
				problems = append(problems, fmt.Sprintf("ablation %q: claim %q has no section", c.ID, base))
				continue
			}
			if !strings.Contains(strings.Join(section(lines, hs, i), "\n"), "`"+c.ID+"`") {
				problems = append(problems, fmt.Sprintf("ablation %q: the section %q does not name it (`%s`)", c.ID, hs[i].text, c.ID))
			}
			continue
		}
		i := sectionOf(c)
		if i < 0 {
			problems = append(problems, fmt.Sprintf("claim %q (%s): no ### heading under \"The claims at small scale\" begins with its paper's name", c.ID, c.Title))
			continue
		}
		if !slices.ContainsFunc(section(lines, hs, i), func(l string) bool { return strings.HasPrefix(l, "|") }) {
			problems = append(problems, fmt.Sprintf("claim %q: the section %q holds no table", c.ID, hs[i].text))
		}
	}
	return problems
}

// Every claim of scripts/claims.toml is written up in docs/claims.md (claimSectionProblems): a section that
// went missing (as DialogueCSE's did in 1979e45) fails here.
func TestClaimsHaveTheirSections(t *testing.T) {
	root := repoRoot(t)
	spec, err := claims.ReadSpec(filepath.Join(root, "scripts", "claims.toml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "claims.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Claims) == 0 {
		t.Fatal("scripts/claims.toml holds no claim")
	}
	for _, p := range claimSectionProblems(spec, string(b)) {
		t.Errorf("docs/claims.md: %s", p)
	}
}

// Every "the X section above" of README.md and docs/ names a heading above it.
func TestSectionsAboveExist(t *testing.T) {
	root := repoRoot(t)
	for _, f := range docs(t, root) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, p := range sectionAboveProblems(string(b)) {
			t.Errorf("%s: %s", rel, p)
		}
	}
}

func TestClaimSectionProblems(t *testing.T) {
	spec := &claims.Spec{Claims: []claims.Claim{
		{ID: "dse", Title: "DSE Tables 2, 3 and 4: DSE > SimCSE"},
		{ID: "mgt", Title: "MGT Table 2: MGT > ensembles"},
		{ID: "dse-ablation", Title: "Ablation: where DSE's drop starts"},
		{ID: "mgt-ablation-centred", Title: "Ablation: MGT, centred"},
	}}
	doc := strings.Join([]string{
		"# Claims",
		"## The claims at small scale",
		"### DSE Tables 2-4: partly holds",
		"| a | b |",
		"The ablation (`dse-ablation`) locates it.",
		"### MGT Table 2: holds",
		"| a | b |",
		"## Ablations",
		"`mgt-ablation-centred`",
	}, "\n")
	if p := claimSectionProblems(spec, doc); len(p) != 1 || !strings.Contains(p[0], `ablation "mgt-ablation-centred": the section "MGT Table 2: holds" does not name it`) {
		t.Errorf("problems %q, want the MGT section not naming its ablation", p)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"### MGT Table 2: holds", "### MGTX Table 2", `claim "mgt" (MGT Table 2: MGT > ensembles): no ### heading`},
		{"### DSE Tables 2-4: partly holds", "#### DSE Tables 2-4", `claim "dse" (DSE Tables 2, 3 and 4: DSE > SimCSE): no ###`},
		{"## The claims at small scale", "## Elsewhere", `claim "dse"`},
		{"### DSE Tables 2-4: partly holds\n| a | b |", "### DSE Tables 2-4: partly holds", `claim "dse": the section "DSE Tables 2-4: partly holds" holds no table`},
		{"The ablation (`dse-ablation`)", "The ablation", `ablation "dse-ablation": the section`},
	} {
		d := strings.Replace(doc, tc.from, tc.to, 1)
		if p := claimSectionProblems(spec, d); !strings.Contains(strings.Join(p, "\n"), tc.want) {
			t.Errorf("%q → %q: problems %q, want %q", tc.from, tc.to, p, tc.want)
		}
	}
	spec.Claims = append(spec.Claims, claims.Claim{ID: "rcl-ablation"})
	if p := claimSectionProblems(spec, doc); !strings.Contains(strings.Join(p, "\n"), `ablation "rcl-ablation": no claim "rcl"`) {
		t.Errorf("problems %q, want rcl-ablation without its claim", p)
	}
}

func TestSectionAboveProblems(t *testing.T) {
	doc := strings.Join([]string{
		"# Top",          // 1
		"## DSE Table 2", // 2
		"See the DSE section above, and (the Top", // 3
		"section above).",                         // 4
		"```sh",                                   // 5
		"# MGT comment, not a heading",            // 6
		"```",                                     // 7
		"But not the MGT section above,",          // 8
		"nor the DSE Table 3 section above,",      // 9
		"nor the DS section above.",               // 10
		"## MGT",                                  // 11
		"Section above: no reference here.",       // 12
	}, "\n")
	want := []string{
		`line 8: "the MGT section above": no heading above it is MGT or begins with it`,
		`line 9: "the DSE Table 3 section above"`,
		`line 10: "the DS section above"`,
	}
	got := sectionAboveProblems(doc)
	if len(got) != len(want) {
		t.Fatalf("problems %q, want %d: %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: %q, want %q", i, got[i], want[i])
		}
	}
}
