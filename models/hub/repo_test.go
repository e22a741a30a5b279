package hub

import "testing"

func TestRepoIDs(t *testing.T) {
	tests := []struct {
		ref    string
		valid  bool
		folder string
	}{
		{"bert-base-uncased", true, "models--bert-base-uncased"},
		{"TODBERT/TOD-BERT-JNT-V1", true, "models--TODBERT--TOD-BERT-JNT-V1"},
		{"roberta_base.v2", true, "models--roberta_base.v2"},
		{"a/b/c", false, ""},
		{"./models/bert", false, ""},
		{"/abs/path", false, ""},
		{"org--x/name", false, ""},
		{"org/na..me", false, ""},
		{"-lead/name", false, ""},
		{"", false, ""},
	}
	for _, tc := range tests {
		if got := validRepoID(tc.ref); got != tc.valid {
			t.Errorf("validRepoID(%q) = %v, want %v", tc.ref, got, tc.valid)
		}
		if tc.valid && repoFolderName(tc.ref) != tc.folder {
			t.Errorf("repoFolderName(%q) = %q, want %q", tc.ref, repoFolderName(tc.ref), tc.folder)
		}
	}
}

func TestCheckRevision(t *testing.T) {
	for rev, ok := range map[string]bool{
		"main": true, "v1.0": true, "refs/pr/1": true, commitA: true,
		"../../etc": false, "a//b": false, "/abs": false, "": false, `a\b`: false,
	} {
		if err := checkRevision(rev); (err == nil) != ok {
			t.Errorf("checkRevision(%q) = %v, want ok=%v", rev, err, ok)
		}
	}
}

func TestNormalizeETag(t *testing.T) {
	for in, want := range map[string]string{
		`"abc123"`: "abc123", `W/"abc123"`: "abc123", "abc123": "abc123", ` "x" `: "x",
	} {
		if got := normalizeETag(in); got != want {
			t.Errorf("normalizeETag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContentRangeStart(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"bytes 100-199/200", 100, true},
		{"bytes 0-0/1", 0, true},
		{"bytes */200", 0, false},
		{"items 1-2/3", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		got, err := contentRangeStart(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("contentRangeStart(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
