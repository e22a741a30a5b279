package torchbin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDisallowedClasses checks that every global outside the allow-list is
// refused by name, wherever it appears and whichever opcode names it, and
// that nothing it asks for happens.
func TestDisallowedClasses(t *testing.T) {
	f32 := spec{name: "w", class: "FloatStorage", key: "0", numel: 2, size: []int{2}, stride: []int{1}}
	tests := []struct {
		name   string
		pickle func(canary string) []byte
		want   string
	}{
		{"GLOBAL posix.system REDUCE", func(c string) []byte {
			var p pk
			return p.proto(2).global("posix", "system").str("touch " + c).op(0x85).reduce().stop().Bytes()
		}, "posix.system"},
		{"GLOBAL os.system at protocol 0", func(c string) []byte {
			var p pk
			p.global("os", "system").mark().op('V').WriteString("touch " + c + "\n")
			return p.tuple().reduce().stop().Bytes()
		}, "os.system"},
		{"STACK_GLOBAL builtins.eval", func(c string) []byte {
			var p pk
			p.proto(4).op(0x8c, 8).WriteString("builtins")
			p.op(0x8c, 4).WriteString("eval")
			return p.op(0x93).str("open('" + c + "','w')").op(0x85).reduce().stop().Bytes()
		}, "builtins.eval"},
		{"INST subprocess.Popen", func(c string) []byte {
			var p pk
			p.mark().str("touch").str(c).op('i').WriteString("subprocess\nPopen\n")
			return p.stop().Bytes()
		}, "subprocess.Popen"},
		{"__builtin__.getattr inside a state dict", func(c string) []byte {
			var p pk
			p.proto(2).op('}').mark().str("w").tensor(f32, false)
			p.str("evil").global("__builtin__", "getattr").global("__builtin__", "object").str("x").op(0x86).reduce()
			return p.op('u').stop().Bytes()
		}, "__builtin__.getattr"},
		{"copy_reg._reconstructor of a forbidden class", func(c string) []byte {
			var p pk
			p.proto(2).global("copy_reg", "_reconstructor").mark().global("nt", "system")
			return p.global("__builtin__", "object").op('N').tuple().reduce().stop().Bytes()
		}, "nt.system"},
		{"gotch's unimplemented _rebuild_qtensor", func(c string) []byte {
			var p pk
			return p.proto(2).global("torch._utils", "_rebuild_qtensor").op(')').reduce().stop().Bytes()
		}, "torch._utils._rebuild_qtensor"},
		{"gotch's thnn backend shim", func(c string) []byte {
			var p pk
			return p.proto(2).global("torch.nn.backends.thnn", "_get_thnn_function_backend").op(')').reduce().stop().Bytes()
		}, "torch.nn.backends.thnn._get_thnn_function_backend"},
		{"storage class outside the list", func(c string) []byte {
			s := f32
			s.class = "QInt8Storage"
			return statePickle([]spec{s}, false)
		}, "torch.QInt8Storage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			canary := filepath.Join(dir, "pwned")
			path := filepath.Join(dir, "pytorch_model.bin")
			if err := os.WriteFile(path, checkpoint(t, tc.pickle(canary), le([]float32{1, 2})), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrClassNotAllowed) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q should wrap ErrClassNotAllowed and name %s and the file", err, tc.want)
			}
			if _, err := os.Stat(canary); !os.IsNotExist(err) {
				t.Errorf("the pickle's command ran: %s exists", canary)
			}
		})
	}
}

// TestDisallowedClassLegacy checks the allow-list on each pickle of the
// legacy stream.
func TestDisallowedClassLegacy(t *testing.T) {
	var evil pk
	evil.proto(2).global("posix", "system").str("true").op(0x85).reduce().stop()
	valid := legacyBytes(statePickle([]spec{{name: "w", class: "FloatStorage", key: "k", numel: 1, size: []int{1}, stride: []int{1}}}, true),
		[]string{"k"}, [][]byte{le([]float32{1})}, []int{4})
	tests := []struct {
		name string
		file []byte
	}{
		{"in the magic-number pickle", append(evil.Bytes(), valid...)},
		{"in the state-dict pickle", legacyBytes(evil.Bytes(), nil, nil, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFile(writeTemp(t, "legacy.bin", tc.file))
			if !errors.Is(err, ErrClassNotAllowed) || !strings.Contains(err.Error(), "posix.system") {
				t.Fatalf("error %v, want one naming posix.system", err)
			}
		})
	}
}
