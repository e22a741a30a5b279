package serve

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"

	"convrep/models"
)

// finish cuts v to its first dims values (0: all of them) and scales it to length 1 when unit: what a
// route returns for one input.
func finish(v []float32, dims int, unit bool) []float32 {
	if dims > 0 && dims < len(v) {
		v = v[:dims]
	}
	if unit {
		models.Unit(v)
	}
	return v
}

// base64Floats is v as OpenAI's encoding_format "base64" sends it: little-endian float32s.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// dimensions checks a request's dimensions field (nil: not given) against the model's width.
func (s *Server) dimensions(d *int) (int, *apiError) {
	switch {
	case d == nil:
		return 0, nil
	case *d < 1 || *d > s.dims:
		return 0, fail(http.StatusBadRequest, KindValidation, "invalid_dimensions", "dimensions",
			"dimensions %d: the model's vectors have %d values; ask for 1 to %d", *d, s.dims, s.dims)
	}
	return *d, nil
}
