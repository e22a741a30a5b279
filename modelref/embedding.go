package modelref

import (
	"errors"
	"fmt"
	"strings"

	"convrep/models"
	"convrep/models/sbert"
	"convrep/tokenizers"
)

// Embedding is how the model at dir embeds, as embed and serve take it: the --pooling flag when given, else
// what the folder declares for sentence-transformers (its Pooling and Normalize modules), else mean pooling;
// from says which. The layout's MaxSeqLength is the folder's declared input length (0: none).
func Embedding(dir, flagPooling string) (l sbert.Layout, from string, err error) {
	l, err = sbert.Read(dir)
	switch {
	case errors.Is(err, sbert.ErrNone):
		l, from = sbert.Layout{Pooling: models.Mean}, "the default (the folder declares no pooling)"
	case err != nil:
		return sbert.Layout{}, "", err
	default:
		from = "the folder's sentence-transformers modules"
	}
	if flagPooling != "" {
		l.Pooling, from = models.Pooling(flagPooling), "--pooling"
	}
	return l, from, nil
}

// InputLength is the longest input in tokens and where it came from: --max-length when given, else the
// max_seq_length the folder declares for sentence-transformers (which truncates there, so that both give
// the same vectors), else the model's position limit. None is longer than the limit.
func InputLength(flagLength, declared, limit int) (int, string) {
	switch {
	case flagLength > 0:
		return min(flagLength, limit), "--max-length"
	case declared > 0:
		return min(declared, limit), "the folder's max_seq_length (sentence_bert_config.json)"
	default:
		return limit, "the model's position limit"
	}
}

// ParseTruncation reads a --truncation flag: which end of a too-long text is cut.
func ParseTruncation(s string) (tokenizers.Truncation, error) {
	switch strings.ToLower(s) {
	case "right":
		return tokenizers.TruncateRight, nil
	case "left":
		return tokenizers.TruncateLeft, nil
	}
	return 0, fmt.Errorf("--truncation %q is not right or left", s)
}
