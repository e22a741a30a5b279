package evaluatecmd

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// The similarity tasks' --max-length defaults are DSE App. B.1's: 64 intent and out-of-scope, 128 response
// selection; the fine-tuning tasks leave it to the --protocol (-1).
func TestMaxLengthDefaults(t *testing.T) {
	for task, want := range map[string]string{"intent": "64", "oos": "64", "response": "128", "acts": "-1", "finetune-intent": "-1",
		"finetune-response": "-1", "probe": "-1", "suite": "-1"} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = w
		err = dispatch(context.Background(), []string{task, "--help"}, zap.NewNop())
		os.Stderr = stderr
		w.Close()
		help, _ := io.ReadAll(r)
		r.Close()
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s --help: %v", task, err)
		}
		m := regexp.MustCompile(`-max-length int\n[^\n]*\(default (-?\d+)\)`).FindSubmatch(help)
		if m == nil || string(m[1]) != want || !strings.Contains(string(help), "DSE App. B.1") {
			t.Errorf("%s: --max-length default %q, want %s:\n%s", task, m, want, help)
		}
	}
}
