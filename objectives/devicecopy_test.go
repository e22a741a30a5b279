package objectives

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// A batch built on the host reaches the device through models.ToDevice (pinned memory, a non-blocking copy):
// tensor.MustTo / To on a tensor just made from a Go slice copies from pageable memory and makes the batch
// builder wait for the GPU's stream to drain, every batch. The test reads the objectives' sources and
// names every such copy to a device other than the CPU.
func TestHostTensorsReachTheDeviceWithoutBlocking(t *testing.T) {
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && blockingHostCopy(call) {
				found = append(found, fset.Position(call.Pos()).String())
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("host tensors copied to the device blocking (use models.ToDevice):\n  %s", strings.Join(found, "\n  "))
	}
}

// blockingHostCopy reports whether call is x.MustTo(dev, …) or x.To(dev, …), dev not gotch.CPU, where x is
// a chain of calls that starts from ts.OfSlice / ts.MustOfSlice.
func blockingHostCopy(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || (sel.Sel.Name != "MustTo" && sel.Sel.Name != "To") || len(call.Args) == 0 {
		return false
	}
	if dev, ok := call.Args[0].(*ast.SelectorExpr); ok && dev.Sel.Name == "CPU" {
		return false
	}
	for x := sel.X; ; {
		inner, ok := x.(*ast.CallExpr)
		if !ok {
			return false
		}
		fn, ok := inner.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		if pkg, ok := fn.X.(*ast.Ident); ok && pkg.Name == "ts" && strings.HasSuffix(fn.Sel.Name, "OfSlice") {
			return true
		}
		x = fn.X
	}
}

// The check itself: it must see the blocking form and let the others be.
func TestBlockingHostCopyRecognisesTheForms(t *testing.T) {
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"ts.MustOfSlice(idx).MustTo(dev, true)", true},
		{"ts.MustOfSlice(cand).MustView(shape, true).MustTo(dev, true)", true},
		{"ts.MustOfSlice(idx).MustTo(gotch.CPU, true)", false},
		{"models.ToDevice(ts.MustOfSlice(idx), dev)", false},
		{"mask.MustTo(dev, false)", false},
	} {
		e, err := parser.ParseExpr(c.src)
		if err != nil {
			t.Fatal(err)
		}
		call, ok := e.(*ast.CallExpr)
		if got := ok && blockingHostCopy(call); got != c.want {
			t.Errorf("%s: blocking host copy %v, want %v", c.src, got, c.want)
		}
	}
}
