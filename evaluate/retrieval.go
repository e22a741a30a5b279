package evaluate

// RetrievalSet is a response-selection test set: the true response of Contexts[i] is Responses[i], and the
// candidates of a query are rows of Responses (see SampleCandidates).
type RetrievalSet struct {
	Dataset   string     // the name used in outputs and split files, e.g. "amazonqa"
	Source    string     // the file (and split) whose rows the indices count
	Split     string     // the dataset's split (test, val), recorded in the result rows; "" for a file of one's own
	Contexts  [][]string // each query's turns, oldest first; one turn for utterance-level sets
	Responses []string
}

// QAPair is one AmazonQA question with its answer.
type QAPair struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// AmazonQASet is the utterance-level set of DSE Appendix B: a question is the query, its answer the response.
func AmazonQASet(pairs []QAPair, source string) *RetrievalSet {
	s := &RetrievalSet{Dataset: "amazonqa", Source: source}
	for _, p := range pairs {
		s.Contexts = append(s.Contexts, []string{p.Question})
		s.Responses = append(s.Responses, p.Answer)
	}
	return s
}
