package safetensors

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// checkCoverage checks that the entries tile [0, dataLen) with no overlap, no
// gap and nothing left over, as the specification requires.
func checkCoverage(infos []TensorInfo, dataLen int64) error {
	byOffset := slices.Clone(infos)
	slices.SortFunc(byOffset, func(a, b TensorInfo) int {
		if a.Begin != b.Begin {
			return cmp.Compare(a.Begin, b.Begin)
		}
		if a.End != b.End {
			return cmp.Compare(a.End, b.End)
		}
		return strings.Compare(a.Name, b.Name)
	})
	var pos int64
	prev := ""
	for _, t := range byOffset {
		if t.End > dataLen {
			return fmt.Errorf("tensor %q: %w: data_offsets [%d,%d] run past the end of the %d-byte data section (file truncated?)",
				t.Name, ErrOffsets, t.Begin, t.End, dataLen)
		}
		if t.Begin < pos {
			return fmt.Errorf("tensor %q: %w: data_offsets [%d,%d] overlap tensor %q, which ends at %d",
				t.Name, ErrOffsets, t.Begin, t.End, prev, pos)
		}
		if t.Begin > pos {
			return fmt.Errorf("tensor %q: %w: gap: data bytes [%d,%d) before it belong to no tensor",
				t.Name, ErrOffsets, pos, t.Begin)
		}
		pos, prev = t.End, t.Name
	}
	if pos != dataLen {
		return fmt.Errorf("%w: trailing bytes: the tensors cover %d bytes of the %d-byte data section",
			ErrOffsets, pos, dataLen)
	}
	return nil
}
