package evaluate

// Example is one labelled utterance.
type Example struct {
	Text  string `json:"text"`
	Label string `json:"label"`
}

// Split is a list of examples in file order; its indices are the row indices that split files hold.
type Split []Example

// Labels returns the split's distinct labels in order of first appearance.
func (s Split) Labels() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range s {
		if !seen[e.Label] {
			seen[e.Label] = true
			out = append(out, e.Label)
		}
	}
	return out
}

// OOSLabel is the label of out-of-scope utterances, as CLINC150 writes it.
const OOSLabel = "oos"
