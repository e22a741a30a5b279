// Package safetensors reads and writes the safetensors checkpoint format in
// pure Go.
//
// A file is an 8-byte little-endian header length N, then N bytes of UTF-8
// JSON, then the data section:
//
//	{"__metadata__":{"format":"pt"},
//	 "<name>":{"dtype":"F32","shape":[2,3],"data_offsets":[begin,end]}, ...}
//
// Offsets are relative to the start of the data section; each tensor's bytes
// are little-endian and row-major. The reader validates everything a corrupt
// or hostile file could get wrong (lengths, JSON, dtypes, shapes, overflow,
// offsets that overlap, leave gaps or run past the data) and returns an error
// naming the tensor at fault instead of panicking. The writer produces the
// same bytes as the checkpoints under ../shared/fixtures: compact JSON with
// non-ASCII escaped, entries in name order, the header padded with spaces to
// a multiple of 8, and the data contiguous in name order.
package safetensors
