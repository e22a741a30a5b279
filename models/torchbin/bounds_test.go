package torchbin

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// bounded runs load and wants it done within a second and 256 MB of allocations, whatever the file holds
// (the bound for a file of at most 1 MB), and its error to hold want.
func bounded(t *testing.T, file []byte, want string) {
	t.Helper()
	if len(file) > 1<<20+1<<16 {
		t.Fatalf("the crafted file has %d bytes; the bound is stated for about 1 MB", len(file))
	}
	path := writeTemp(t, "pytorch_model.bin", file)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := ReadFile(path)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d-byte file: %v, %.1f MB allocated: %v", len(file), took, float64(alloc)/(1<<20), err)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v, want one naming the file and holding %q", err, want)
	}
	if took > time.Second || alloc > 256<<20 {
		t.Errorf("took %v and %d MB; the bound is 1 s and 256 MB", took, alloc>>20)
	}
}

// A pickle's integers are refused before gotch's quadratic decoding sees them: LONG4 of 512 KiB (it took 6 s),
// LONG1 longer than the legacy magic number, a text LONG of a million digits; and a malformed INT line, which
// gotch would read as 0, is an error.
func TestPickleIntegersBounded(t *testing.T) {
	long4 := func(n int) []byte {
		var p pk
		p.proto(2).op(0x8b).Write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
		p.Write(bytes.Repeat([]byte{0x7f}, n))
		return p.stop().Bytes()
	}
	var long1, text, badInt pk
	long1.proto(2).op(0x8a, 40).Write(bytes.Repeat([]byte{1}, 40))
	long1.stop()
	text.op('L').WriteString(strings.Repeat("9", 1<<20) + "L\n")
	text.stop()
	badInt.op('I').WriteString("12x\n")
	badInt.stop()
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"LONG4 of 512 KiB, legacy stream", long4(512 << 10), "LONG4 integers are refused"},
		{"LONG4 in a zip's data.pkl", checkpoint(t, long4(1<<10)), "LONG4 integers are refused"},
		{"LONG1 of 40 bytes", long1.Bytes(), "LONG1 integer of 40 bytes"},
		{"text LONG of a million digits", text.Bytes(), "integer line longer than 24 bytes"},
		{"malformed INT", badInt.Bytes(), `integer line "12x" is not a 64-bit integer`},
	} {
		t.Run(tc.name, func(t *testing.T) { bounded(t, tc.file, tc.want) })
	}
}

// A million one-byte opcodes or more (32 MiB of them took 10 s and 2.7 GB) are refused after the budget, before
// the unpickler builds anything.
func TestPickleOpcodeBudget(t *testing.T) {
	var p pk
	p.proto(2).op(bytes.Repeat([]byte{'N'}, maxOpcodes+1)...).stop()
	bounded(t, p.Bytes(), fmt.Sprintf("more than %d opcodes", maxOpcodes))
	var q pk
	q.proto(2).op(bytes.Repeat([]byte{'N'}, 1000)...).stop()
	if _, err := pickleLen(bytes.NewReader(q.Bytes()), int64(q.Len())); err != nil {
		t.Errorf("a thousand opcodes: %v", err)
	}
}

// Records that share bytes are refused: here data/1's directory entry points at data/0's data (a 67 KB file
// once became 512 MB of tensors this way).
func TestZipRecordsMustNotOverlap(t *testing.T) {
	s := spec{class: "FloatStorage", numel: 4, size: []int{4}, stride: []int{1}}
	a, b := s, s
	a.name, a.key, b.name, b.key = "a", "0", "b", "1"
	data := le([]float32{1, 2, 3, 4})
	file := checkpoint(t, statePickle([]spec{a, b}, false), data, data)
	zr, err := zip.NewReader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	offsets := map[string]uint32{}
	for _, f := range zr.File {
		off, _ := f.DataOffset()
		offsets[f.Name] = uint32(off) - 30 - uint32(len(f.Name)) - uint32(len(f.Extra))
	}
	// Rewrite the central directory entry of archive/data/1 to point at archive/data/0's local header.
	sig := []byte{0x50, 0x4b, 0x01, 0x02}
	for i := bytes.Index(file, sig); i >= 0; {
		nameLen := int(binary.LittleEndian.Uint16(file[i+28:]))
		if string(file[i+46:i+46+nameLen]) == "archive/data/1" {
			binary.LittleEndian.PutUint32(file[i+42:], offsets["archive/data/0"])
		}
		j := bytes.Index(file[i+4:], sig)
		if j < 0 {
			break
		}
		i += 4 + j
	}
	bounded(t, file, "share bytes")
}

// A directory of more records than any checkpoint has is refused without reading them.
func TestZipRecordCount(t *testing.T) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i := range maxRecords + 1 {
		if _, err := w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("archive/r%d", i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, "pytorch_model.bin", buf.Bytes())
	start := time.Now()
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than the %d", maxRecords)) {
		t.Errorf("error %v", err)
	}
	t.Logf("%d records, %d bytes: refused in %v", maxRecords+1, buf.Len(), time.Since(start))
}

// Compressed tensor records may not inflate to more than maxInflation times the archive: a megabyte of zeros
// deflates to a kilobyte.
func TestZipInflationCapped(t *testing.T) {
	const n = 1 << 18
	s := spec{name: "w", class: "FloatStorage", key: "0", numel: n, size: []int{n}, stride: []int{1}}
	file := zipBytes(t, []record{{"archive/data.pkl", statePickle([]spec{s}, false)}, {"archive/data/0", make([]byte, 4*n)}}, true)
	bounded(t, file, "inflate to more than")
}
