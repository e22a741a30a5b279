package datasets

import (
	"archive/zip"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"go.uber.org/zap"
)

// MetaLWOZ (Lee et al. 2019) upstream: ToDDAPT's data_ptm/metalwoz/metalwoz-test-v1.zip, the DSTC8 test
// release, whose members dstc8_metalwoz_heldout.zip (4 held-out domains) and dstc8_multiwoz2.0.zip
// (single-domain MultiWOZ 2.0 dialogues) are archives again. Their dialogues/<TASK>.txt hold one JSON
// dialogue per line, {id, domain, turns: [text, ...]}, the bot speaking first: even turns are the system's.
// The training release, metalwoz-v1.zip, has dialogues/*.txt at its top and is read alike when present.
// IDs are <archive>/<id>, the archive that holds the dialogues file ("dstc8_multiwoz2.0/SNG01856"), so that
// the MultiWOZ dialogues can be told apart: 430 of them are in MultiWOZ 2.1's validation and test sets,
// which evaluation uses, so they are dropped unless ReadOptions.MetaLWOZMultiWOZ keeps them.

// metaLWOZMultiWOZArchive is the member of the test release that holds MultiWOZ 2.0's single-domain
// dialogues, under their MultiWOZ ids (SNG01856 …), the prefix of their IDs here.
const metaLWOZMultiWOZArchive = "dstc8_multiwoz2.0"

// IsMetaLWOZMultiWOZ reports whether d is one of the MultiWOZ 2.0 dialogues MetaLWOZ brings.
func IsMetaLWOZMultiWOZ(d Dialogue) bool {
	return d.Corpus == "metalwoz" && strings.HasPrefix(d.ID, metaLWOZMultiWOZArchive+"/")
}

// DropMetaLWOZMultiWOZ returns ds without MetaLWOZ's MultiWOZ 2.0 dialogues, in place, and how many it
// dropped.
func DropMetaLWOZMultiWOZ(ds []Dialogue) ([]Dialogue, int) {
	out := ds[:0]
	for _, d := range ds {
		if !IsMetaLWOZMultiWOZ(d) {
			out = append(out, d)
		}
	}
	clear(ds[len(out):]) // no dropped dialogue stays reachable
	return out, len(ds) - len(out)
}

func metaLWOZFiles(root string) ([]string, error) {
	zs, err := filepath.Glob(filepath.Join(root, "data_ptm", "metalwoz", "metalwoz*.zip"))
	if err != nil {
		return nil, err
	}
	if len(zs) == 0 {
		return nil, fmt.Errorf("no data_ptm/metalwoz/metalwoz*.zip in %s", root)
	}
	sort.Strings(zs)
	return zs, nil
}

func readMetaLWOZ(root string, opt ReadOptions) ([]Dialogue, error) {
	files, err := metaLWOZFiles(root)
	if err != nil {
		return nil, err
	}
	var all []Dialogue
	for _, z := range files {
		zr, err := openZip(z)
		if err != nil {
			return nil, err
		}
		ds, n, err := readMetaLWOZArchive(z, baseNoExt(z), &zr.Reader, true, opt)
		zr.Close()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: no dialogues/*.txt in it nor in the archives inside it", z)
		}
		all = append(all, ds...)
	}
	if !opt.MetaLWOZMultiWOZ {
		var n int
		all, n = DropMetaLWOZMultiWOZ(all)
		opt.logger().Info("dropped MetaLWOZ's MultiWOZ 2.0 dialogues (data.metalwoz_multiwoz keeps them)", zap.Int("dropped", n))
	}
	return all, nil
}

// readMetaLWOZArchive reads the dialogues/*.txt of an archive, members in name order, and, when nested is
// set, those of the archives inside it. It returns how many dialogue files it found.
func readMetaLWOZArchive(where, prefix string, zr *zip.Reader, nested bool, opt ReadOptions) ([]Dialogue, int, error) {
	members := append([]*zip.File(nil), zr.File...)
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	var all []Dialogue
	files := 0
	for _, f := range members {
		switch {
		case nested && strings.HasSuffix(f.Name, ".zip"):
			inner, err := nestedZip(where, f)
			if err != nil {
				return nil, 0, err
			}
			ds, n, err := readMetaLWOZArchive(where+"!"+f.Name, baseNoExt(f.Name), inner, false, opt)
			if err != nil {
				return nil, 0, err
			}
			all, files = append(all, ds...), files+n
		case path.Base(path.Dir(f.Name)) == "dialogues" && strings.HasSuffix(f.Name, ".txt"):
			files++
			src := newSource("metalwoz", where+"!"+f.Name, opt)
			err := readMember(where, f, func(r io.Reader) error {
				ds, err := parseMetaLWOZ(src, prefix, baseNoExt(f.Name), r)
				all = append(all, ds...)
				return err
			})
			src.finish()
			if err != nil {
				return nil, 0, err
			}
		}
	}
	return all, files, nil
}

type metaLWOZDialogue struct {
	ID     *string   `json:"id"`
	Domain *string   `json:"domain"`
	Turns  *[]string `json:"turns"`
}

func (d *metaLWOZDialogue) recordID() string { return deref(d.ID) }

// parseMetaLWOZ parses one dialogues/<TASK>.txt; a record without a domain takes the file's (<TASK>).
func parseMetaLWOZ(src *source, prefix, task string, r io.Reader) ([]Dialogue, error) {
	var out []Dialogue
	err := readJSONLines(src, r, func(d *metaLWOZDialogue) error {
		if deref(d.ID) == "" {
			return missing("id")
		}
		if d.Turns == nil {
			return missing("turns")
		}
		domain := deref(d.Domain)
		if domain == "" {
			domain = task
		}
		dl := Dialogue{ID: prefix + "/" + *d.ID, Corpus: "metalwoz", Domain: domainName(domain)}
		for j, text := range *d.Turns {
			sp := User
			if j%2 == 0 {
				sp = System
			}
			dl.Turns = addTurn(dl.Turns, sp, text, src.opt.MergeSameSpeaker)
		}
		out = append(out, dl)
		return nil
	})
	return out, err
}
