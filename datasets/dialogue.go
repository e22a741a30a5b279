// Package datasets reads the dialogue corpora convrep pretrains on, each in its upstream layout, into one
// dialogue type, and builds the training examples of the objectives (DSE pairs, ...) from them.
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
