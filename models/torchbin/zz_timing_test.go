package torchbin

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZCorpusTiming(t *testing.T) {
	dir := os.Getenv("CORPUS")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	storages := [][]byte{make([]byte, 24), make([]byte, 8), make([]byte, 64)}
	var worst time.Duration
	var worstName string
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		lines := strings.Split(string(raw), "\n")
		s := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		pkl, err := strconv.Unquote(s)
		if err != nil {
			t.Fatal(err)
		}
		z := checkpoint(t, []byte(pkl), storages...)
		start := time.Now()
		read(bytes.NewReader(z), int64(len(z)))
		if d := time.Since(start); d > worst {
			worst, worstName = d, f
		}
	}
	t.Log(len(files), worst, worstName)
}
