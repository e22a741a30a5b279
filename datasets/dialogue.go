// Package datasets reads the dialogue corpora convrep pretrains on, each in its upstream layout, and one's
// own dialogue files, into one dialogue type; it keeps the tokenised pairs an objective builds from them in
// a cache (its file format, streamed builds and keys), and draws the training order. The objectives build
// their own examples: DSE's pair constructions and query cut are objectives/dse's.
package datasets

// Speaker is who said a turn.
type Speaker string

const (
	User   Speaker = "user"
	System Speaker = "system"
)

// Turn is one utterance of a dialogue.
type Turn struct {
	Speaker Speaker `json:"speaker"`
	Text    string  `json:"text"`
}

// Dialogue is one conversation from a corpus. ID is unique within its corpus.
type Dialogue struct {
	ID     string `json:"id"`
	Corpus string `json:"corpus"`
	Domain string `json:"domain,omitempty"`
	Turns  []Turn `json:"turns"`
}
