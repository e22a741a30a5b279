// Package host runs the row functions of package kernels on the CPU, compiled by g++ from the very headers
// that NVRTC compiles for the GPU, so that Go tests can hold them to references: Philox to Random123's
// known answers, the mask to its statistics, and each forward and backward to fp64 and to libtorch.
//
// Every function takes lanes, the number of cooperating lanes per row: 1 runs a row function as the host's
// one lane; more runs one thread per lane with a barrier-based block sum, standing in for a GPU block.
package host

// #cgo CXXFLAGS: -std=c++20 -O2
// #cgo LDFLAGS: -lstdc++ -lpthread
// #include "host.h"
import "C"

import (
	"fmt"
	"unsafe"

	// host.cpp includes the headers of package kernels, which Go's build cache does not see: they are outside
	// this folder. That package embeds them, so importing it keys this package's build on their contents, and an
	// edit to a header rebuilds the C++ here instead of testing a stale copy.
	_ "convrep/internal/gpu/kernels"
)

// Storage is a tensor element as the kernels store it: float32, or bf16 as its uint16 bits.
type Storage interface{ float32 | uint16 }

// Philox4x32 runs rounds rounds of Philox4x32 on ctr under key.
func Philox4x32(ctr [4]uint32, key [2]uint32, rounds int) [4]uint32 {
	var out [4]uint32
	C.convrep_host_philox4x32((*C.uint32_t)(&ctr[0]), (*C.uint32_t)(&key[0]), C.int(rounds), (*C.uint32_t)(&out[0]))
	return out
}

// DropoutU is the uniform number in [0, 1) that decides whether element e is dropped.
func DropoutU(seed, offset uint64, e int64) float32 {
	return float32(C.convrep_host_dropout_u(C.uint64_t(seed), C.uint64_t(offset), C.int64_t(e)))
}

// Keep is the dropout mask of elements first, ..., first+n-1 for drop probability p.
func Keep(seed, offset uint64, first int64, n int, p float32) []bool {
	if n == 0 {
		return nil
	}
	b := make([]uint8, n)
	C.convrep_host_dropout_keep(C.uint64_t(seed), C.uint64_t(offset), C.int64_t(first), C.int64_t(n), C.float(p), (*C.uint8_t)(&b[0]))
	keep := make([]bool, n)
	for i, v := range b {
		keep[i] = v != 0
	}
	return keep
}

// Keep4 is the mask of the chunk of n <= 4 elements from e as the row functions draw it, one Philox draw per
// group of four: bit k says whether element e+k survives.
func Keep4(seed, offset uint64, e int64, n int, p float32) uint {
	return uint(C.convrep_host_dropout_keep4(C.uint64_t(seed), C.uint64_t(offset), C.int64_t(e), C.int(n), C.float(p)))
}

// BF16 rounds f to bf16 as the kernels store it.
func BF16(f float32) uint16 { return uint16(C.convrep_host_f32_to_bf16(C.float(f))) }

// Shape is a [Rows, Cols] problem: Rows rows of Cols columns, normalised or activated along Cols.
type Shape struct{ Rows, Cols int }

func (s Shape) n() int { return s.Rows * s.Cols }

func (s Shape) check(lanes int, sizes map[string]int) error {
	if s.Rows < 0 || s.Cols < 1 || lanes < 1 {
		return fmt.Errorf("kernels host: bad shape %dx%d or lanes %d", s.Rows, s.Cols, lanes)
	}
	if s.Cols > C.CONVREP_HOST_MAX_COLS {
		return fmt.Errorf("kernels host: %d columns, more than the %d a host lane holds", s.Cols, C.CONVREP_HOST_MAX_COLS)
	}
	for name, n := range sizes {
		want := s.n()
		switch name {
		case "gamma", "beta", "bias":
			want = s.Cols
		case "mean", "rstd":
			want = s.Rows
		}
		if n != want {
			return fmt.Errorf("kernels host: %s has %d elements, shape %dx%d needs %d", name, n, s.Rows, s.Cols, want)
		}
	}
	return nil
}

// LNForward is the result of DropAddLNForward.
type LNForward[T Storage] struct {
	Out, Sum   []T
	Mean, Rstd []float32
}

// LNBackward is the result of DropAddLNBackward; DGammaPart and DBetaPart are [blocks, cols].
type LNBackward[T Storage] struct {
	DX, DResid            []T
	DGammaPart, DBetaPart []float32
}

// Dropout says which dropout to apply: probability P of dropping, and the Philox seed and offset.
type Dropout struct {
	P            float32
	Seed, Offset uint64
}

func ptr[E any](s []E) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

func isBF16[T Storage]() bool {
	var z T
	_, ok := any(z).(uint16)
	return ok
}

// DropAddLNForward is convrep_drop_add_ln_fwd on the host: out = LayerNorm(dropout(x) + resid).
func DropAddLNForward[T Storage](s Shape, x, resid []T, gamma, beta []float32, eps float32, d Dropout, lanes int) (LNForward[T], error) {
	if err := s.check(lanes, map[string]int{"x": len(x), "resid": len(resid), "gamma": len(gamma), "beta": len(beta)}); err != nil {
		return LNForward[T]{}, err
	}
	r := LNForward[T]{Out: make([]T, s.n()), Sum: make([]T, s.n()), Mean: make([]float32, s.Rows), Rstd: make([]float32, s.Rows)}
	if s.n() == 0 {
		return r, nil
	}
	g, b, mean, rstd := (*C.float)(&gamma[0]), (*C.float)(&beta[0]), (*C.float)(&r.Mean[0]), (*C.float)(&r.Rstd[0])
	rows, cols, p, e := C.int(s.Rows), C.int(s.Cols), C.float(d.P), C.float(eps)
	seed, off, l := C.uint64_t(d.Seed), C.uint64_t(d.Offset), C.int(lanes)
	if isBF16[T]() {
		C.convrep_host_drop_add_ln_fwd_bf16((*C.uint16_t)(ptr(x)), (*C.uint16_t)(ptr(resid)), g, b,
			(*C.uint16_t)(ptr(r.Out)), (*C.uint16_t)(ptr(r.Sum)), mean, rstd, rows, cols, p, e, seed, off, l)
	} else {
		C.convrep_host_drop_add_ln_fwd_f32((*C.float)(ptr(x)), (*C.float)(ptr(resid)), g, b,
			(*C.float)(ptr(r.Out)), (*C.float)(ptr(r.Sum)), mean, rstd, rows, cols, p, e, seed, off, l)
	}
	return r, nil
}

// DropAddLNBackward is convrep_drop_add_ln_bwd on the host with a grid of blocks blocks.
func DropAddLNBackward[T Storage](s Shape, dy, sum []T, mean, rstd, gamma []float32, d Dropout, blocks, lanes int) (LNBackward[T], error) {
	if err := s.check(lanes, map[string]int{"dy": len(dy), "sum": len(sum), "mean": len(mean), "rstd": len(rstd), "gamma": len(gamma)}); err != nil {
		return LNBackward[T]{}, err
	}
	if blocks < 1 {
		return LNBackward[T]{}, fmt.Errorf("kernels host: %d blocks", blocks)
	}
	r := LNBackward[T]{DX: make([]T, s.n()), DResid: make([]T, s.n()),
		DGammaPart: make([]float32, blocks*s.Cols), DBetaPart: make([]float32, blocks*s.Cols)}
	if s.Rows == 0 {
		return r, nil
	}
	mp, rp, gp := (*C.float)(&mean[0]), (*C.float)(&rstd[0]), (*C.float)(&gamma[0])
	dg, db := (*C.float)(&r.DGammaPart[0]), (*C.float)(&r.DBetaPart[0])
	rows, cols, p, seed, off := C.int(s.Rows), C.int(s.Cols), C.float(d.P), C.uint64_t(d.Seed), C.uint64_t(d.Offset)
	if isBF16[T]() {
		C.convrep_host_drop_add_ln_bwd_bf16((*C.uint16_t)(ptr(dy)), (*C.uint16_t)(ptr(sum)), mp, rp, gp,
			(*C.uint16_t)(ptr(r.DX)), (*C.uint16_t)(ptr(r.DResid)), dg, db, rows, cols, p, seed, off, C.int(blocks), C.int(lanes))
	} else {
		C.convrep_host_drop_add_ln_bwd_f32((*C.float)(ptr(dy)), (*C.float)(ptr(sum)), mp, rp, gp,
			(*C.float)(ptr(r.DX)), (*C.float)(ptr(r.DResid)), dg, db, rows, cols, p, seed, off, C.int(blocks), C.int(lanes))
	}
	return r, nil
}

// BiasGELUForward is convrep_bias_gelu_fwd on the host: out = gelu(x + bias).
func BiasGELUForward[T Storage](s Shape, x []T, bias []float32, lanes int) ([]T, error) {
	if err := s.check(lanes, map[string]int{"x": len(x), "bias": len(bias)}); err != nil {
		return nil, err
	}
	out := make([]T, s.n())
	if s.n() == 0 {
		return out, nil
	}
	if isBF16[T]() {
		C.convrep_host_bias_gelu_fwd_bf16((*C.uint16_t)(ptr(x)), (*C.float)(&bias[0]), (*C.uint16_t)(ptr(out)), C.int(s.Rows), C.int(s.Cols), C.int(lanes))
	} else {
		C.convrep_host_bias_gelu_fwd_f32((*C.float)(ptr(x)), (*C.float)(&bias[0]), (*C.float)(ptr(out)), C.int(s.Rows), C.int(s.Cols), C.int(lanes))
	}
	return out, nil
}

// BiasGELUBackward is convrep_bias_gelu_bwd on the host with a grid of blocks blocks: dx and the
// [blocks, cols] partial sums of dbias.
func BiasGELUBackward[T Storage](s Shape, x []T, bias []float32, dy []T, blocks, lanes int) (dx []T, dbiasPart []float32, err error) {
	if err := s.check(lanes, map[string]int{"x": len(x), "bias": len(bias), "dy": len(dy)}); err != nil {
		return nil, nil, err
	}
	if blocks < 1 {
		return nil, nil, fmt.Errorf("kernels host: %d blocks", blocks)
	}
	dx, dbiasPart = make([]T, s.n()), make([]float32, blocks*s.Cols)
	if s.Rows == 0 {
		return dx, dbiasPart, nil
	}
	rows, cols, g, l := C.int(s.Rows), C.int(s.Cols), C.int(blocks), C.int(lanes)
	if isBF16[T]() {
		C.convrep_host_bias_gelu_bwd_bf16((*C.uint16_t)(ptr(x)), (*C.float)(&bias[0]), (*C.uint16_t)(ptr(dy)), (*C.uint16_t)(ptr(dx)), (*C.float)(&dbiasPart[0]), rows, cols, g, l)
	} else {
		C.convrep_host_bias_gelu_bwd_f32((*C.float)(ptr(x)), (*C.float)(&bias[0]), (*C.float)(ptr(dy)), (*C.float)(ptr(dx)), (*C.float)(&dbiasPart[0]), rows, cols, g, l)
	}
	return dx, dbiasPart, nil
}

// Embeddings are the inputs of the embeddings' kernels: float32 tables of Cols columns (Type nil where the
// family has no token types) and a token's ids into each, one per row.
type Embeddings struct {
	Word, Pos, Type      []float32
	IDs, PosIDs, TypeIDs []int64
}

func (e Embeddings) check(s Shape, lanes int, sizes map[string]int) error {
	if err := s.check(lanes, sizes); err != nil {
		return err
	}
	for name, table := range map[string][]float32{"word": e.Word, "pos": e.Pos} {
		if len(table) == 0 || len(table)%s.Cols != 0 {
			return fmt.Errorf("kernels host: the %s table has %d values, not rows of %d", name, len(table), s.Cols)
		}
	}
	if len(e.Type)%s.Cols != 0 || (e.Type == nil) != (e.TypeIDs == nil) {
		return fmt.Errorf("kernels host: a type table of %d values with %d type ids", len(e.Type), len(e.TypeIDs))
	}
	for name, ids := range map[string][]int64{"ids": e.IDs, "position ids": e.PosIDs} {
		if len(ids) != s.Rows {
			return fmt.Errorf("kernels host: %d %s for %d rows", len(ids), name, s.Rows)
		}
	}
	if e.Type != nil && len(e.TypeIDs) != s.Rows {
		return fmt.Errorf("kernels host: %d type ids for %d rows", len(e.TypeIDs), s.Rows)
	}
	return nil
}

// c is the tables and ids as the C functions take them, with each table's row count.
func (e Embeddings) c(cols int) (word, pos, typ *C.float, ids, posIDs, typeIDs *C.int64_t, vocab, positions, types C.int64_t) {
	return (*C.float)(ptr(e.Word)), (*C.float)(ptr(e.Pos)), (*C.float)(ptr(e.Type)),
		(*C.int64_t)(ptr(e.IDs)), (*C.int64_t)(ptr(e.PosIDs)), (*C.int64_t)(ptr(e.TypeIDs)),
		C.int64_t(len(e.Word) / cols), C.int64_t(len(e.Pos) / cols), C.int64_t(len(e.Type) / cols)
}

// EmbedForward is the result of EmbedLNForward.
type EmbedForward struct {
	Out        []float32
	Mean, Rstd []float32
}

// EmbedBackward is the result of EmbedLNBackward: the gradient of the embeddings' sum, and the [blocks, cols]
// partial sums of γ's and β's.
type EmbedBackward struct {
	DS                    []float32
	DGammaPart, DBetaPart []float32
}

// EmbedLNForward is convrep_embed_ln_drop_fwd on the host: out = dropout(LayerNorm(word[id] + pos[pos id] +
// type[type id])).
func EmbedLNForward(s Shape, e Embeddings, gamma, beta []float32, eps float32, d Dropout, lanes int) (EmbedForward, error) {
	if err := e.check(s, lanes, map[string]int{"gamma": len(gamma), "beta": len(beta)}); err != nil {
		return EmbedForward{}, err
	}
	r := EmbedForward{Out: make([]float32, s.n()), Mean: make([]float32, s.Rows), Rstd: make([]float32, s.Rows)}
	if s.n() == 0 {
		return r, nil
	}
	word, pos, typ, ids, posIDs, typeIDs, vocab, positions, types := e.c(s.Cols)
	C.convrep_host_embed_ln_drop_fwd_f32(word, pos, typ, ids, posIDs, typeIDs, vocab, positions, types,
		(*C.float)(&gamma[0]), (*C.float)(&beta[0]), (*C.float)(&r.Out[0]), (*C.float)(&r.Mean[0]), (*C.float)(&r.Rstd[0]),
		C.int(s.Rows), C.int(s.Cols), C.float(d.P), C.float(eps), C.uint64_t(d.Seed), C.uint64_t(d.Offset), C.int(lanes))
	return r, nil
}

// EmbedLNBackward is convrep_embed_ln_drop_bwd on the host with a grid of blocks blocks.
func EmbedLNBackward(s Shape, e Embeddings, dy, mean, rstd, gamma []float32, d Dropout, blocks, lanes int) (EmbedBackward, error) {
	if err := e.check(s, lanes, map[string]int{"dy": len(dy), "mean": len(mean), "rstd": len(rstd), "gamma": len(gamma)}); err != nil {
		return EmbedBackward{}, err
	}
	if blocks < 1 {
		return EmbedBackward{}, fmt.Errorf("kernels host: %d blocks", blocks)
	}
	r := EmbedBackward{DS: make([]float32, s.n()), DGammaPart: make([]float32, blocks*s.Cols), DBetaPart: make([]float32, blocks*s.Cols)}
	if s.Rows == 0 {
		return r, nil
	}
	word, pos, typ, ids, posIDs, typeIDs, vocab, positions, types := e.c(s.Cols)
	C.convrep_host_embed_ln_drop_bwd_f32((*C.float)(&dy[0]), word, pos, typ, ids, posIDs, typeIDs, vocab, positions, types,
		(*C.float)(&mean[0]), (*C.float)(&rstd[0]), (*C.float)(&gamma[0]), (*C.float)(&r.DS[0]),
		(*C.float)(&r.DGammaPart[0]), (*C.float)(&r.DBetaPart[0]), C.int(s.Rows), C.int(s.Cols), C.float(d.P),
		C.uint64_t(d.Seed), C.uint64_t(d.Offset), C.int(blocks), C.int(lanes))
	return r, nil
}
