package modelref

import "testing"

func TestInputLength(t *testing.T) {
	for _, c := range []struct {
		flag, declared, limit, want int
		from                        string
	}{
		{0, 0, 512, 512, "the model's position limit"},
		{0, 32, 512, 32, "the folder's max_seq_length (sentence_bert_config.json)"},
		{0, 1024, 512, 512, "the folder's max_seq_length (sentence_bert_config.json)"},
		{64, 32, 512, 64, "--max-length"},
		{600, 32, 512, 512, "--max-length"},
	} {
		got, from := InputLength(c.flag, c.declared, c.limit)
		if got != c.want || from != c.from {
			t.Errorf("InputLength(%d, %d, %d) = %d from %q, want %d from %q", c.flag, c.declared, c.limit, got, from, c.want, c.from)
		}
	}
}
