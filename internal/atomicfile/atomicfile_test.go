package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	err := Write(path, func(w io.Writer) error {
		w.Write([]byte("half of the new"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the writer's error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("a failed write changed the file to %q", b)
	}
	if err := WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("file holds %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWriteDirReplacesTheFolderWhole(t *testing.T) {
	boom := errors.New("disk full")
	writeFiles := func(files map[string]string, fail error) func(string) error {
		return func(tmp string) error {
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(tmp, name), []byte(body), 0o644); err != nil {
					return err
				}
			}
			return fail
		}
	}
	for _, tc := range []struct {
		name    string
		old     map[string]string // nil: no folder before
		write   func(string) error
		wantErr error
		want    map[string]string
	}{
		{name: "new folder", write: writeFiles(map[string]string{"a": "1", "b": "2"}, nil), want: map[string]string{"a": "1", "b": "2"}},
		{name: "replaces, dropping stale files", old: map[string]string{"a": "old", "stale": "x"},
			write: writeFiles(map[string]string{"a": "1", "b": "2"}, nil), want: map[string]string{"a": "1", "b": "2"}},
		{name: "failed write keeps the old folder", old: map[string]string{"a": "old"},
			write: writeFiles(map[string]string{"a": "half"}, boom), wantErr: boom, want: map[string]string{"a": "old"}},
		{name: "failed write makes no folder", write: writeFiles(map[string]string{"a": "half"}, boom), wantErr: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "model")
			if tc.old != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				writeFiles(tc.old, nil)(dir)
			}
			if err := WriteDir(dir, tc.write); !errors.Is(err, tc.wantErr) {
				t.Fatalf("WriteDir: %v, want %v", err, tc.wantErr)
			}
			got := map[string]string{}
			entries, err := os.ReadDir(dir)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				got[e.Name()] = string(b)
			}
			if len(got) != len(tc.want) {
				t.Errorf("folder holds %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if left, _ := os.ReadDir(parent); len(left) > 1 || (len(left) == 1 && left[0].Name() != "model") {
				t.Errorf("temporary folders left beside it: %v", left)
			}
			if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm() != 0o755 {
				t.Errorf("folder mode %v, want 0755", fi.Mode().Perm())
			}
		})
	}
}

// A write interrupted by the process's exit leaves no partial file once RemovePending has run: the temporary
// file of the write under way is removed, the target keeps its old contents.
func TestRemovePendingDuringAWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.bin")
	if err := WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- Write(path, func(w io.Writer) error {
			w.Write([]byte("partial"))
			close(inside)
			<-release
			return errors.New("interrupted")
		})
	}()
	<-inside
	RemovePending()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "cache.bin" {
		t.Errorf("during the write, after RemovePending: %v, want cache.bin alone", entries)
	}
	close(release)
	<-done
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("the target holds %q, want its old contents", b)
	}
}
