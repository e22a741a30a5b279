package datasets

import (
	"bufio"
	"errors"
)

// boundedLine reads one line (its newline included) into *buf, which it reuses. A line longer than limit is
// read to its end and dropped: long reports it, and the line returned is empty. err is io.EOF at the end of
// the input.
func boundedLine(br *bufio.Reader, buf *[]byte, limit int) (line []byte, long bool, err error) {
	*buf = (*buf)[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(*buf)+len(chunk) > limit {
				long, *buf = true, (*buf)[:0]
			} else {
				*buf = append(*buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if cap(*buf) > 1<<24 && long {
			*buf = nil
		}
		return *buf, long, err
	}
}
