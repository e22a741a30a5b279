package evaluate

import (
	"path/filepath"
	"strings"
	"testing"

	"convrep/checkpoint"
	"convrep/safetensors"
)

type fixedEncoder [][]float32

func (f fixedEncoder) Embed(texts []string) ([][]float32, error) { return f[:len(texts)], nil }

func writeHead(t *testing.T, tensors map[string]safetensors.Tensor) string {
	t.Helper()
	var list []safetensors.Tensor
	for name, x := range tensors {
		x.Name = checkpoint.ParamPrefix + name
		list = append(list, x)
	}
	path := filepath.Join(t.TempDir(), "step-000000025.safetensors")
	if err := safetensors.WriteFile(path, nil, list); err != nil {
		t.Fatal(err)
	}
	return path
}

func f32(t *testing.T, shape []int64, v ...float32) safetensors.Tensor {
	t.Helper()
	x, err := safetensors.FromFloat32s("", shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// The head is torch.nn.Linear's y = x·Wᵀ twice with a ReLU between: W1 = [[1,2],[−3,1]], W2 = [[1,−1]]; for
// x = (1,1): W1·x = (3,−2), ReLU (3,0), W2·(3,0) = 3; for x = (−1,2): (3,5) → (3,5) → −2.
func TestHeadMapsThroughBothLayers(t *testing.T) {
	path := writeHead(t, map[string]safetensors.Tensor{
		"contrast_head.0.weight": f32(t, []int64{2, 2}, 1, 2, -3, 1),
		"contrast_head.2.weight": f32(t, []int64{1, 2}, 1, -1),
	})
	h, err := ReadHead(path, "contrast_head", fixedEncoder{{1, 1}, {-1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Embed([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]) != 1 || got[0][0] != 3 || got[1][0] != -2 {
		t.Errorf("head outputs %v, want [[3] [-2]]", got)
	}
	// The same head over another encoder: x = (−1,2) first gives −2; the first head keeps its encoder.
	other, err := h.Over(fixedEncoder{{-1, 2}}).Embed([]string{"c"})
	if err != nil || len(other) != 1 || other[0][0] != -2 || h.Enc.(fixedEncoder)[0][0] != 1 {
		t.Errorf("Over: %v, %v; the first head's encoder %v", other, err, h.Enc)
	}
}

func TestReadHeadRejects(t *testing.T) {
	for _, c := range []struct {
		name    string
		tensors map[string]safetensors.Tensor
		want    string
	}{
		{"no head", map[string]safetensors.Tensor{"bert.x": f32(t, []int64{1}, 1)}, `no head named "contrast_head"`},
		{"second layer missing", map[string]safetensors.Tensor{"contrast_head.0.weight": f32(t, []int64{2, 2}, 1, 2, 3, 4)}, "contrast_head.2.weight"},
		{"mismatched layers", map[string]safetensors.Tensor{
			"contrast_head.0.weight": f32(t, []int64{2, 2}, 1, 2, 3, 4),
			"contrast_head.2.weight": f32(t, []int64{1, 3}, 1, 2, 3),
		}, "want [d,d] and [out,d]"},
		{"a vector", map[string]safetensors.Tensor{
			"contrast_head.0.weight": f32(t, []int64{4}, 1, 2, 3, 4),
			"contrast_head.2.weight": f32(t, []int64{1, 2}, 1, 2),
		}, "want a matrix"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeHead(t, c.tensors)
			_, err := ReadHead(path, "contrast_head", fixedEncoder{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s and %q", err, path, c.want)
			}
		})
	}
	path := writeHead(t, map[string]safetensors.Tensor{
		"contrast_head.0.weight": f32(t, []int64{2, 2}, 1, 2, -3, 1),
		"contrast_head.2.weight": f32(t, []int64{1, 2}, 1, -1),
	})
	h, err := ReadHead(path, "contrast_head", fixedEncoder{{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Embed([]string{"a"}); err == nil || !strings.Contains(err.Error(), "3 values") {
		t.Errorf("an embedding of the wrong size: %v", err)
	}
}
