package safetensors

import "fmt"

// DType is a safetensors element type, spelled as in the header ("F32").
type DType string

// The element types of the safetensors specification that occupy whole bytes.
const (
	Bool   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	F8E8M0 DType = "F8_E8M0"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	C64    DType = "C64"
	F64    DType = "F64"
	I64    DType = "I64"
	U64    DType = "U64"
)

var dtypeSizes = map[DType]int{
	Bool: 1, U8: 1, I8: 1, F8E5M2: 1, F8E4M3: 1, F8E8M0: 1,
	I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4,
	C64: 8, F64: 8, I64: 8, U64: 8,
}

// Size returns the number of bytes per element, or an error wrapping ErrDType
// for a type this package does not know.
func (d DType) Size() (int, error) {
	if n, ok := dtypeSizes[d]; ok {
		return n, nil
	}
	switch d {
	case "F4", "F6_E2M3", "F6_E3M2":
		// Packed sub-byte types: legal in recent spec versions, but no
		// element has a byte size and no model here uses them.
		return 0, fmt.Errorf("%w %q (sub-byte dtypes are not supported)", ErrDType, string(d))
	}
	return 0, fmt.Errorf("%w %q", ErrDType, string(d))
}
