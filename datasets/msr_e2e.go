package datasets

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// MSR-E2E (Li et al. 2018, the Microsoft Dialogue Challenge) upstream: {movie,restaurant,taxi}_all.tsv, in
// ToDDAPT's data_ptm/msre2e/original_data.zip or, as the challenge's repository has them, in data/. Each
// line is one message: session id, message id, timestamp, speaker (user/agent), text, dialogue acts (the
// rest of the columns). A dialogue is a session; its messages are ordered by message id.

const msrZip = "data_ptm/msre2e/original_data.zip"

func msrFiles(root string) ([]string, error) {
	if zips := existing(filepath.Join(root, msrZip)); len(zips) > 0 {
		return zips, nil
	}
	tsvs, err := filepath.Glob(filepath.Join(root, "data", "*_all.tsv"))
	if err != nil {
		return nil, err
	}
	if len(tsvs) == 0 {
		return nil, fmt.Errorf("no %s nor data/*_all.tsv in %s", msrZip, root)
	}
	sort.Strings(tsvs)
	return tsvs, nil
}

func readMSR(root string, opt ReadOptions) ([]Dialogue, error) {
	var all []Dialogue
	err := eachMSRFile(root, opt, func(src *source, domain string, r io.Reader) error {
		ds, err := parseMSR(src, domain, r)
		all = append(all, ds...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// eachMSRFile hands every *_all.tsv under root to parse, in name order, with its source and domain: the
// members of the archive when it is there, else the plain files of data/.
func eachMSRFile(root string, opt ReadOptions, parse func(src *source, domain string, r io.Reader) error) error {
	files, err := msrFiles(root)
	if err != nil {
		return err
	}
	if strings.HasSuffix(files[0], ".zip") {
		return eachMSRMember(files[0], opt, parse)
	}
	for _, f := range files {
		src := newSource("msr_e2e", f, opt)
		err := readFile(f, func(r io.Reader) error { return parse(src, msrDomain(f), r) })
		src.finish()
		if err != nil {
			return err
		}
	}
	return nil
}

// eachMSRMember is eachMSRFile for the archive: its *_all.tsv members, read in place.
func eachMSRMember(zipPath string, opt ReadOptions, parse func(src *source, domain string, r io.Reader) error) error {
	zr, err := openZip(zipPath)
	if err != nil {
		return err
	}
	defer zr.Close()
	var members []*zip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "_all.tsv") {
			members = append(members, f)
		}
	}
	if len(members) == 0 {
		return fmt.Errorf("%s: no *_all.tsv member", zipPath)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	for _, f := range members {
		src := newSource("msr_e2e", zipPath+"!"+f.Name, opt)
		err := readMember(zipPath, f, func(r io.Reader) error { return parse(src, msrDomain(f.Name), r) })
		src.finish()
		if err != nil {
			return err
		}
	}
	return nil
}

// msrDomain is the file's domain: "movie_all.tsv" -> "movie".
func msrDomain(name string) string {
	return domainName(strings.TrimSuffix(path.Base(filepath.ToSlash(name)), "_all.tsv"))
}

type msrMessage struct {
	id      int
	speaker Speaker
	text    string
	acts    []string // the dialogue-act columns as written, trimmed, empty ones left out
}

// parseMSR parses one *_all.tsv into one dialogue per session, sessions in the order they first appear.
// IDs are domain/session: each file numbers its sessions from 1.
func parseMSR(src *source, domain string, r io.Reader) ([]Dialogue, error) {
	var order []string
	sessions := map[string][]msrMessage{}
	err := scanMSR(src, r, func(_ int, session string, m msrMessage) {
		if _, ok := sessions[session]; !ok {
			order = append(order, session)
		}
		sessions[session] = append(sessions[session], m)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Dialogue, 0, len(order))
	for _, s := range order {
		msgs := sessions[s]
		// Stable: a message id given twice keeps its file order.
		sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].id < msgs[j].id })
		d := Dialogue{ID: domain + "/" + s, Corpus: "msr_e2e", Domain: domain}
		for _, m := range msgs {
			d.Turns = addTurn(d.Turns, m.speaker, m.text, src.opt.MergeSameSpeaker)
		}
		out = append(out, d)
	}
	return out, nil
}

// scanMSR hands every message line of one *_all.tsv to each, in file order, with its 1-based line number and
// its session; blank lines and the header are passed over, and a malformed line goes to src.bad (an error, or
// skipped under SkipBad).
func scanMSR(src *source, r io.Reader, each func(line int, session string, m msrMessage)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			if err := src.bad(lineName(n, ""), fmt.Errorf("unreadable, so is the rest of the file: %w", err)); err != nil {
				return err
			}
			return nil
		}
		line = strings.TrimRight(line, "\r\n")
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if strings.TrimSpace(line) != "" && !(n == 1 && msrHeader(line)) {
			session, m, perr := parseMSRLine(line)
			if perr != nil {
				name := lineName(n, "")
				if session != "" {
					name = fmt.Sprintf("line %d (session %s)", n, session)
				}
				if err := src.bad(name, perr); err != nil {
					return err
				}
			} else {
				each(n, session, m)
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

func msrHeader(line string) bool {
	first, _, _ := strings.Cut(line, "\t")
	return strings.EqualFold(strings.TrimSpace(first), "session.ID")
}

// parseMSRLine parses one message line; the session is returned, when readable, to name the line in errors.
func parseMSRLine(line string) (string, msrMessage, error) {
	cols := strings.Split(line, "\t")
	session := strings.TrimSpace(cols[0])
	if len(cols) < 5 {
		return session, msrMessage{}, fmt.Errorf("%d tab-separated columns, want at least 5 (session, message, timestamp, speaker, text)", len(cols))
	}
	if session == "" {
		return "", msrMessage{}, missing("session id")
	}
	id, err := strconv.Atoi(strings.TrimSpace(cols[1]))
	if err != nil {
		return session, msrMessage{}, fmt.Errorf("message id %q is not a number", cols[1])
	}
	sp, err := speakerOf(strings.TrimSpace(cols[3]), "user", "agent")
	if err != nil {
		return session, msrMessage{}, err
	}
	var acts []string
	for _, a := range cols[5:] {
		if a = strings.TrimSpace(a); a != "" {
			acts = append(acts, a)
		}
	}
	return session, msrMessage{id: id, speaker: sp, text: msrText(cols[4]), acts: acts}, nil
}

// msrText undoes two artefacts of the export: taxi_all.tsv wraps a text holding a comma in double quotes,
// and all three files keep JSON escapes (\r\n, \/, \u201C) as literal characters.
func msrText(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch c := s[i+1]; c {
		case 'n', 'r', 't':
			b.WriteByte(' ')
			i++
		case '/':
			b.WriteByte('/')
			i++
		case 'u':
			r, width := msrUnicodeEscape(s[i:])
			if width == 0 {
				b.WriteByte('\\') // not an escape: a literal backslash, as in "Action\Adventure"
				continue
			}
			b.WriteRune(r)
			i += width - 1
		default:
			b.WriteByte('\\')
		}
	}
	return b.String()
}

// msrUnicodeEscape decodes the \uXXXX (or surrogate pair \uXXXX\uXXXX) at the start of s and returns the rune
// and the bytes it spans, or width 0 when s does not start with one.
func msrUnicodeEscape(s string) (rune, int) {
	r1, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r1) {
		if r2, ok := hex4(s[6:]); ok {
			if r := utf16.DecodeRune(r1, r2); r != '\uFFFD' {
				return r, 12
			}
		}
		return '\uFFFD', 6
	}
	return r1, 6
}

// hex4 reads `\uXXXX` at the start of s.
func hex4(s string) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[2:6], 16, 16)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}
