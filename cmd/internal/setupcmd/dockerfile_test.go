package setupcmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction after line continuations are joined.
type instruction struct {
	Cmd   string   // upper case: FROM, RUN, COPY, ...
	Flags []string // leading --name=value flags (COPY --from=build)
	Args  string   // the rest, continuations joined with a space
	JSON  []string // Args in exec form (["a", "b"]), when it is one
	Line  int      // where the instruction starts, 1-based
}

// stage is a FROM and the instructions up to the next one.
type stage struct {
	Image, Name string
	Body        []instruction
}

// parseDockerfile reads the subset of Dockerfile syntax this project uses: comments, blank lines, backslash
// continuations (comment lines inside a continued instruction are dropped, as Docker does), flags and the exec
// (JSON) form. Heredocs and a changed escape character are refused rather than misread.
func parseDockerfile(src string) ([]instruction, error) {
	var out []instruction
	var cur strings.Builder
	start := 0
	lines := strings.Split(src, "\n")
	for i, raw := range lines {
		line := strings.TrimRight(raw, " \t\r")
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			if strings.HasPrefix(strings.ReplaceAll(trimmed, " ", ""), "#escape=") && len(out) == 0 {
				return nil, fmt.Errorf("line %d: escape directives are not supported", i+1)
			}
			continue
		}
		if cur.Len() > 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSpace(strings.TrimSuffix(line, "\\")) + " ")
			continue
		}
		cur.WriteString(trimmed)
		ins, err := parseInstruction(strings.TrimSpace(cur.String()), start)
		if err != nil {
			return nil, err
		}
		out = append(out, ins)
		cur.Reset()
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: the instruction's last line ends with a continuation", start)
	}
	return out, nil
}

func parseInstruction(s string, line int) (instruction, error) {
	cmd, rest, _ := strings.Cut(s, " ")
	ins := instruction{Cmd: strings.ToUpper(cmd), Line: line}
	rest = strings.TrimSpace(rest)
	if strings.Contains(rest, "<<") && (ins.Cmd == "RUN" || ins.Cmd == "COPY") && strings.Contains(rest, "<<EOF") {
		return ins, fmt.Errorf("line %d: heredocs are not supported", line)
	}
	if ins.Cmd == "COPY" || ins.Cmd == "ADD" || ins.Cmd == "RUN" || ins.Cmd == "FROM" {
		for strings.HasPrefix(rest, "--") {
			flag, after, _ := strings.Cut(rest, " ")
			ins.Flags = append(ins.Flags, flag)
			rest = strings.TrimSpace(after)
		}
	}
	ins.Args = rest
	if strings.HasPrefix(rest, "[") {
		if err := json.Unmarshal([]byte(rest), &ins.JSON); err != nil {
			return ins, fmt.Errorf("line %d: %s's exec form is not a JSON list of strings: %w", line, ins.Cmd, err)
		}
	}
	return ins, nil
}

// stages groups the instructions by FROM; instructions before the first FROM (global ARGs) are returned apart.
func stages(ins []instruction) (global []instruction, st []stage, err error) {
	for _, in := range ins {
		if in.Cmd != "FROM" {
			if len(st) == 0 {
				global = append(global, in)
			} else {
				st[len(st)-1].Body = append(st[len(st)-1].Body, in)
			}
			continue
		}
		f := strings.Fields(in.Args)
		s := stage{Image: f[0]}
		switch {
		case len(f) == 3 && strings.EqualFold(f[1], "AS"):
			s.Name = f[2]
		case len(f) != 1:
			return nil, nil, fmt.Errorf("line %d: FROM %q is not IMAGE [AS NAME]", in.Line, in.Args)
		}
		st = append(st, s)
	}
	return global, st, nil
}

// flag returns the value of a --name=value flag, or "".
func (in instruction) flag(name string) string {
	for _, f := range in.Flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func TestParseDockerfile(t *testing.T) {
	src := "# syntax comment\n\nARG A=1\nFROM img:1 AS build\nRUN a \\\n    # a comment inside\n    && b \\\n  && c\n" +
		"COPY --from=build --chmod=755 /x /y\nENTRYPOINT [\"/bin/t\", \"--flag\"]\nFROM img:2\nCMD echo hi\n"
	ins, err := parseDockerfile(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 7 {
		t.Fatalf("got %d instructions, want 7: %+v", len(ins), ins)
	}
	run := ins[2]
	if run.Cmd != "RUN" || run.Args != "a && b && c" || run.Line != 5 {
		t.Errorf("RUN = %+v, want the three lines joined without the comment, at line 5", run)
	}
	cp := ins[3]
	if cp.flag("from") != "build" || cp.flag("chmod") != "755" || cp.Args != "/x /y" {
		t.Errorf("COPY = %+v", cp)
	}
	if got := ins[4].JSON; len(got) != 2 || got[0] != "/bin/t" || got[1] != "--flag" {
		t.Errorf("ENTRYPOINT exec form = %q", got)
	}
	global, st, err := stages(ins)
	if err != nil {
		t.Fatal(err)
	}
	if len(global) != 1 || len(st) != 2 || st[0].Name != "build" || st[0].Image != "img:1" || st[1].Name != "" || len(st[0].Body) != 3 || len(st[1].Body) != 1 {
		t.Errorf("global %+v, stages %+v", global, st)
	}
	for _, bad := range []string{"RUN a \\\n", "ENTRYPOINT [\"a\", b]\n", "FROM a b c d\n"} {
		ins, err := parseDockerfile(bad)
		if err == nil {
			_, _, err = stages(ins)
		}
		if err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
