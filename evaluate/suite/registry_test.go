package suite

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// Every task registers once, in a known section, with flags that parse from their defaults alone; All lists
// them by section, then by name; the papers' tasks are all there.
func TestRegisteredTasks(t *testing.T) {
	papers := []string{"intent", "oos", "response", "select", "sr", "suite", "tsne", "acts", "finetune-intent", "finetune-response", "probe", "report"}
	var got []string
	all := All()
	for i, task := range all {
		got = append(got, task.Name)
		if i > 0 {
			prev, this := slices.Index(sections, all[i-1].Section), slices.Index(sections, task.Section)
			if prev > this || prev == this && all[i-1].Name >= task.Name {
				t.Errorf("%s listed after %s: want by section, then by name", task.Name, all[i-1].Name)
			}
		}
		if found, ok := Lookup(task.Name); !ok || found.Name != task.Name {
			t.Errorf("Lookup(%q) = %q, %v", task.Name, found.Name, ok)
		}
		if task.Synopsis == "" || task.About == "" || task.Data == "" {
			t.Errorf("%s: a synopsis, an about and its data are wanted for --help: %+v", task.Name, task)
		}
		fs := flag.NewFlagSet(task.Name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := NewFlags(fs)
		task.New().Flags(f)
		if err := fs.Parse(nil); err != nil {
			t.Errorf("%s: %v", task.Name, err)
		}
		if err := f.SetArgs(nil); err != nil {
			t.Errorf("%s: %v", task.Name, err)
		}
	}
	for _, name := range papers {
		if !slices.Contains(got, name) {
			t.Errorf("tasks %v: no %s", got, name)
		}
	}
	if _, ok := Lookup("nosuch"); ok {
		t.Error("Lookup found a task never registered")
	}
}

// A flag read into a typed field is read once the command line has parsed, from its default where not given;
// the options finish in the order they were declared, knowing what was given; arguments go where Args says,
// and are an error where it says nothing.
func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := NewFlags(fs)
	var shots []int
	var seeds []uint64
	var order []string
	f.Parsed("shots", "1,5", "", func(s string) (err error) { shots, err = ParseShots(s); order = append(order, "shots"); return err })
	f.Parsed("seeds", "0-2", "", func(s string) (err error) { seeds, err = ParseSeeds(s); order = append(order, "seeds"); return err })
	var given []string
	f.Then(func(g func(string) bool) error {
		for _, n := range []string{"shots", "seeds"} {
			if g(n) {
				given = append(given, n)
			}
		}
		return nil
	})
	if err := fs.Parse([]string{"--seeds", "3,7"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shots, []int{1, 5}) || !slices.Equal(seeds, []uint64{3, 7}) || !slices.Equal(order, []string{"shots", "seeds"}) || !slices.Equal(given, []string{"seeds"}) {
		t.Errorf("shots %v, seeds %v, order %v, given %v", shots, seeds, order, given)
	}
	if err := f.SetArgs([]string{"x"}); err == nil || !strings.Contains(err.Error(), `unexpected arguments "x"`) {
		t.Errorf("an argument to a task that takes none: %v", err)
	}
	var files []string
	f.Args(&files)
	if err := f.SetArgs([]string{"a", "b"}); err != nil || !slices.Equal(files, []string{"a", "b"}) {
		t.Errorf("arguments %v, %v", files, err)
	}
	if err := fs.Parse([]string{"--shots", "0"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Finish(); err == nil || !strings.Contains(err.Error(), "not a positive number") {
		t.Errorf("--shots 0: %v", err)
	}
}
