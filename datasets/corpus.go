package datasets

import (
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"
)

// ReadOptions control how a corpus is read.
type ReadOptions struct {
	// SkipBad skips a malformed record (and the unreadable rest of a broken file) instead of failing; each
	// of a file's first MaxListedBad is logged at info level with its place and problem, and the number
	// skipped per file.
	SkipBad bool
	// MergeSameSpeaker joins consecutive turns of one speaker with a space, so that turns alternate.
	MergeSameSpeaker bool
	// MetaLWOZMultiWOZ keeps the 2,924 MultiWOZ 2.0 dialogues that MetaLWOZ's test release brings
	// (dstc8_multiwoz2.0.zip); by default they are dropped, as 430 of them are in MultiWOZ 2.1's validation
	// and test sets, which evaluation uses (see DropMetaLWOZMultiWOZ).
	MetaLWOZMultiWOZ bool
	// Logger receives the skip counts and a line per corpus read; nil logs nothing.
	Logger *zap.Logger
	// Files, when set, are dialogue files of the user's own (data.files) that ReadAll reads after the
	// corpora, through the same cleaning, merging and SkipBad (FileSet.EachDialogue).
	Files *FileSet
	// FileRead, when set, is given the report of each of Files' files once it is read (FileSet.EachDialogue).
	FileRead func(FileReport)
	// Bad, when set, is given each malformed record that SkipBad skips, in reading order, in place of the
	// log's line per record (the caller shows them; the count per file is still logged).
	Bad func(*RecordError)
}

func (o ReadOptions) logger() *zap.Logger {
	if o.Logger == nil {
		return zap.NewNop()
	}
	return o.Logger
}

// Corpus is one pretraining corpus in its upstream layout. Root, in Files and Read, is the corpus folder
// (Folder under the data root).
//
// Every reader reads alike:
//   - one Dialogue per source record, in file order, files in a fixed order (splits train, dev, test, then
//     sorted names): a record whose utterances are all empty stays, without turns, so counts match the source;
//   - every split present is read, and nothing records which split a dialogue came from, except an ID
//     prefix where the source's IDs repeat across splits or files ("train/1_00000", "taxi/461");
//   - a turn's text is trimmed and its white space runs collapsed to one space; an empty one is dropped;
//   - the domain is the source's own label, lower-cased ("restaurants,hotels" for SGD's services).
type Corpus struct {
	Name string
	// Folder is the corpus folder's name under the pretraining data root.
	Folder string
	// Files lists the upstream files the corpus is read from, in reading order (archives as one file).
	Files func(root string) ([]string, error)
	// Read reads every dialogue of every split present: files in reading order, records in file order.
	Read func(root string, opt ReadOptions) ([]Dialogue, error)
}

// corpora is the registry, in the order Corpora lists it.
var corpora = []Corpus{
	{Name: "sgd", Folder: "sgd", Files: sgdFiles, Read: readSGD},
	{Name: "msr_e2e", Folder: "msr_e2e", Files: msrFiles, Read: readMSR},
	{Name: "kvret", Folder: "kvret_smd", Files: kvretFiles, Read: readKVRET},
	{Name: "frames", Folder: "frames", Files: framesFiles, Read: readFrames},
	{Name: "woz2", Folder: "woz2", Files: wozFiles, Read: readWOZ},
	{Name: "camrest676", Folder: "camrest676", Files: camRestFiles, Read: readCamRest},
	{Name: "metalwoz", Folder: "metalwoz", Files: metaLWOZFiles, Read: readMetaLWOZ},
	{Name: "taskmaster", Folder: "taskmaster", Files: taskmasterFiles, Read: readTaskmaster},
}

// Corpora returns the names of the known corpora.
func Corpora() []string {
	names := make([]string, len(corpora))
	for i, c := range corpora {
		names[i] = c.Name
	}
	return names
}

// LookupCorpus returns the corpus registered under name.
func LookupCorpus(name string) (Corpus, error) {
	for _, c := range corpora {
		if c.Name == name {
			return c, nil
		}
	}
	return Corpus{}, fmt.Errorf("unknown corpus %q (known: %v)", name, Corpora())
}

// Files returns the upstream files corpus name is read from under root (its corpus folder), in reading
// order; they make a cache key.
func Files(name, root string) ([]string, error) {
	c, err := LookupCorpus(name)
	if err != nil {
		return nil, err
	}
	if err := checkDir(root); err != nil {
		return nil, fmt.Errorf("corpus %s: %w", name, err)
	}
	files, err := c.Files(root)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", name, err)
	}
	return files, nil
}

// ReadCorpus reads corpus name from root, its corpus folder (e.g. <data>/pretrain/sgd).
func ReadCorpus(name, root string, opt ReadOptions) ([]Dialogue, error) {
	c, err := LookupCorpus(name)
	if err != nil {
		return nil, err
	}
	if err := checkDir(root); err != nil {
		return nil, fmt.Errorf("corpus %s: %w", name, err)
	}
	ds, err := c.Read(root, opt)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", name, err)
	}
	if ds, err = uniqueIDs(name, ds, opt); err != nil {
		return nil, err
	}
	opt.logger().Info("read corpus", zap.String("corpus", name), zap.Int("dialogues", len(ds)))
	return ds, nil
}

// ReadAll reads the named corpora (all when names is empty and opt.Files is not set) from their folders under
// dataRoot, in the order named, and then opt.Files.
func ReadAll(dataRoot string, names []string, opt ReadOptions) ([]Dialogue, error) {
	if len(names) == 0 && opt.Files == nil {
		names = Corpora()
	}
	seen := map[string]bool{}
	var all []Dialogue
	for _, name := range names {
		if seen[name] {
			return nil, fmt.Errorf("corpus %q is listed twice", name)
		}
		seen[name] = true
		c, err := LookupCorpus(name)
		if err != nil {
			return nil, err
		}
		ds, err := ReadCorpus(name, filepath.Join(dataRoot, c.Folder), opt)
		if err != nil {
			return nil, err
		}
		all = append(all, ds...)
	}
	if opt.Files != nil {
		ds, err := ReadFiles(*opt.Files, opt)
		if err != nil {
			return nil, err
		}
		all = append(all, ds...)
	}
	return all, nil
}

func checkDir(root string) error {
	st, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("corpus folder: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("corpus folder %s is not a directory", root)
	}
	return nil
}

// uniqueIDs keeps the promise that an ID names one dialogue of its corpus: a repeated ID is a malformed
// record (skipped, keeping the first, under SkipBad).
func uniqueIDs(corpus string, ds []Dialogue, opt ReadOptions) ([]Dialogue, error) {
	seen := make(map[string]bool, len(ds))
	out := ds[:0]
	dups := 0
	for _, d := range ds {
		if seen[d.ID] {
			if !opt.SkipBad {
				return nil, fmt.Errorf("corpus %s: dialogue id %q appears twice", corpus, d.ID)
			}
			dups++
			continue
		}
		seen[d.ID] = true
		out = append(out, d)
	}
	if dups > 0 {
		opt.logger().Warn("skipped dialogues with a repeated id", zap.String("corpus", corpus), zap.Int("skipped", dups))
	}
	return out, nil
}
