package models

// growVocab raises c's vocabulary to n when n is larger and returns the old size, else 0 and c unchanged.
func growVocab(c *Config, n int64) int64 {
	if n <= c.VocabSize {
		return 0
	}
	old := c.VocabSize
	c.VocabSize = n // WriteConfig writes it back
	return old
}

// vocabTensors names the parameters with one row per vocabulary entry: the word embeddings, the MLM
// head's output bias and, when untied, its decoder weight.
func vocabTensors(c *Config) map[string]bool {
	f := c.Family()
	names := map[string]bool{f.wordEmbeddings(): true, f.mlm.bias: true}
	if !c.TieWordEmbeddings {
		names[f.mlm.decoder] = true
	}
	return names
}
