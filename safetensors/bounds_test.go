package safetensors

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHeaderEscapesAndRank(t *testing.T) {
	entry := func(name string) string {
		return `{"` + name + `":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	}
	for _, tc := range []struct {
		name, hdr, want string
	}{
		{"lone high surrogate", entry(`w\ud800`), "lone surrogate"},
		{"lone low surrogate", entry(`w\udc00x`), "lone surrogate"},
		{"high then a letter", entry(`w\ud83dx`), "lone surrogate"},
		{"two highs", entry(`\ud83d\ud83d`), "lone surrogate"},
		{"escaped backslash then u", entry(`w\\ud800`), ""},
		{"a pair", entry(`w\ud83d\ude00`), ""},
		{"rank 65", `{"w":{"dtype":"F32","shape":[` + strings.Repeat("1,", 64) + `1],"data_offsets":[0,4]}}`, "rank 65"},
		{"rank 64", `{"w":{"dtype":"F32","shape":[` + strings.Repeat("1,", 63) + `1],"data_offsets":[0,4]}}`, ""},
	} {
		_, _, err := ParseHeader([]byte(tc.hdr), 4)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A header longer than MaxHeaderSize is refused from its length prefix, before anything is read.
func TestHeaderSizeCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.safetensors")
	b := binary.LittleEndian.AppendUint64(nil, MaxHeaderSize+1)
	if err := os.WriteFile(path, append(b, '{'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrHeaderTooLarge) {
		t.Errorf("header of %d bytes: %v", MaxHeaderSize+1, err)
	}
}
