package serve

import (
	"context"
	"net/http"
	"time"
	"unicode/utf8"

	"convrep/models"
	"convrep/tokenizers"
)

// result is one request's vectors (in input order, as the model pools them) and what it cost.
type result struct {
	vecs                       [][]float32
	tokens, chars              int
	tokenize, queue, inference time.Duration
}

// embed tokenises in (or checks its token ids) and runs it through the batcher. Inputs longer than the
// maximum length are cut when truncate is set, else refused (422). Room for the inputs is reserved before
// tokenising: a server with none answers 429 at once.
func (s *Server) embed(ctx context.Context, in inputs, field string, truncate bool) (*result, *apiError) {
	n := in.len()
	if n > s.cfg.MaxClientBatchSize {
		return nil, fail(http.StatusRequestEntityTooLarge, KindTooLarge, "too_many_inputs", field,
			"%s holds %d inputs; the limit is %d per request (--max-client-batch-size): split it into several requests", field, n, s.cfg.MaxClientBatchSize)
	}
	if !s.batcher.admit(n) {
		return nil, fail(http.StatusTooManyRequests, KindOverloaded, "rate_limit_exceeded", "",
			"the server holds its limit of %d inputs in flight (--max-concurrent-inputs): retry shortly", s.cfg.MaxConcurrentInputs)
	}
	res := &result{}
	start := time.Now()
	rows, aerr := s.encodeAll(ctx, in, field, truncate, res)
	res.tokenize = time.Since(start)
	s.m.tokenize.Observe(res.tokenize.Seconds())
	if aerr != nil {
		s.batcher.release(n)
		return nil, aerr
	}
	j := s.batcher.submit(ctx, rows)
	vecs, err := j.wait()
	switch {
	case err == errGone:
		return nil, fail(499, KindGone, "", "", "the client went away")
	case err == errStopped:
		return nil, fail(http.StatusServiceUnavailable, KindUnavailable, "", "", "the server is stopping")
	case err != nil:
		return nil, fail(http.StatusInternalServerError, KindInternal, "internal_error", "", "the forward pass failed: %v", err)
	}
	res.vecs, res.queue, res.inference = vecs, j.queue, j.inference
	s.m.tokens.Add(float64(res.tokens))
	return res, nil
}

// encodeAll makes the rows of in, counting tokens and characters into res, in one of the tokenise pool's
// slots.
func (s *Server) encodeAll(ctx context.Context, in inputs, field string, truncate bool, res *result) ([]models.Encoded, *apiError) {
	select {
	case s.tokenizers <- struct{}{}:
		defer func() { <-s.tokenizers }()
	case <-ctx.Done():
		return nil, fail(499, KindGone, "", "", "the client went away")
	}
	rows := make([]models.Encoded, 0, in.len())
	for i, t := range in.texts {
		if t == "" {
			return nil, fail(http.StatusUnprocessableEntity, KindEmpty, "empty_input", field, "%s is an empty string", in.name(field, i))
		}
		r, err := s.e.Encode(t)
		if err != nil {
			return nil, fail(http.StatusUnprocessableEntity, KindValidation, "invalid_input", field, "%s: %v", in.name(field, i), err)
		}
		if !truncate && r.Full > s.maxLength {
			return nil, tooLong(in.name(field, i), r.Full, s.maxLength, field)
		}
		rows = append(rows, r)
		res.chars += utf8.RuneCountInString(t)
	}
	for i, ids := range in.ids {
		r, aerr := s.encodeIDs(ids, in.name(field, i), field, truncate)
		if aerr != nil {
			return nil, aerr
		}
		rows = append(rows, r)
	}
	for _, r := range rows {
		res.tokens += len(r.IDs)
	}
	return rows, nil
}

// encodeIDs takes token ids as the model's tokens, as given: no special tokens are added. Each must be in
// the model's vocabulary; a row longer than the maximum length is cut on the truncation side, or refused.
func (s *Server) encodeIDs(ids []int64, name, field string, truncate bool) (models.Encoded, *apiError) {
	for k, id := range ids {
		if id >= s.vocab {
			return models.Encoded{}, fail(http.StatusUnprocessableEntity, KindValidation, "invalid_token_id", field,
				"%s[%d]: token id %d is outside the model's vocabulary (ids 0 to %d)", name, k, id, s.vocab-1)
		}
	}
	full := len(ids)
	if full > s.maxLength {
		if !truncate {
			return models.Encoded{}, tooLong(name, full, s.maxLength, field)
		}
		if s.e.Truncation == tokenizers.TruncateLeft {
			ids = ids[full-s.maxLength:]
		} else {
			ids = ids[:s.maxLength]
		}
	}
	return models.Encoded{IDs: ids, TypeIDs: make([]int64, len(ids)), Full: full}, nil
}

func tooLong(name string, tokens, limit int, field string) *apiError {
	return fail(http.StatusUnprocessableEntity, KindValidation, "input_too_long", field,
		"%s has %d tokens; the model takes at most %d (send truncate: true to cut it, as convrep embed does)", name, tokens, limit)
}
