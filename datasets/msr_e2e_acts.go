package datasets

import "io"

// MSRUserMessage is one user message of MSR-E2E with the dialogue acts its line carries, for tasks that need
// the annotation (DialogueCSE §5.1.2's semantic retrieval takes intent labels from it). ReadCorpus keeps the
// text of the turns only.
type MSRUserMessage struct {
	Source  string // the file, or "archive.zip!member", the message is in
	Line    int    // its 1-based line there
	Domain  string // movie, restaurant or taxi
	Session string
	// Text is cleaned as ReadCorpus cleans a turn: the export's quotes and JSON escapes undone, white space
	// runs collapsed, the ends trimmed.
	Text string
	// Acts are the dialogue-act columns as the file writes them, in order, trimmed, empty columns left out:
	// "request(moviename;city=Seattle)", "greeting(greeting=hi)", "thanks()".
	Acts []string
}

// ReadMSRUserMessages reads every user message of MSR-E2E in root (the corpus folder: the archive
// data_ptm/msre2e/original_data.zip, else data/*_all.tsv), files in name order, lines in file order (not
// reordered by message id). A message whose text is empty once cleaned is left out, as ReadCorpus drops its
// turn; a malformed line fails the read naming its file and line, unless opt.SkipBad.
func ReadMSRUserMessages(root string, opt ReadOptions) ([]MSRUserMessage, error) {
	var out []MSRUserMessage
	err := eachMSRFile(root, opt, func(src *source, domain string, r io.Reader) error {
		return scanMSR(src, r, func(line int, session string, m msrMessage) {
			if m.speaker != User {
				return
			}
			if text := cleanText(m.text); text != "" {
				out = append(out, MSRUserMessage{Source: src.name, Line: line, Domain: domain, Session: session, Text: text, Acts: m.acts})
			}
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
