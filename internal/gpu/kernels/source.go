package kernels

import (
	"embed"
	"strings"
)

//go:embed *.cuh kernels.cu
var files embed.FS

// Files are the program's files in the order Source joins them: each uses only what comes before it.
var Files = []string{
	"portable.cuh",
	"bf16.cuh",
	"philox.cuh",
	"dropout.cuh",
	"reduce.cuh",
	"layernorm.cuh",
	"embeddings.cuh",
	"gelu.cuh",
	"kernels.cu",
}

// Entries are the program's extern "C" __global__ functions, the names cuModuleGetFunction looks up.
var Entries = []string{
	"convrep_drop_add_ln_fwd_f32",
	"convrep_drop_add_ln_bwd_f32",
	"convrep_drop_add_ln_fwd_warp_f32",
	"convrep_drop_add_ln_bwd_warp_f32",
	"convrep_bias_gelu_fwd_f32",
	"convrep_bias_gelu_bwd_f32",
	"convrep_embed_ln_drop_fwd_f32",
	"convrep_embed_ln_drop_bwd_f32",
	"convrep_drop_add_ln_fwd_bf16",
	"convrep_drop_add_ln_bwd_bf16",
	"convrep_drop_add_ln_fwd_warp_bf16",
	"convrep_drop_add_ln_bwd_warp_bf16",
	"convrep_bias_gelu_fwd_bf16",
	"convrep_bias_gelu_bwd_bf16",
}

// Name is the program's name for NVRTC's diagnostics.
const Name = "convrep_kernels.cu"

// Source returns the whole program as one text, Files joined in order, each opened by a #line directive so
// that a compiler's messages name the file and line here. It has no #include: NVRTC compiles it with no
// include path.
func Source() string {
	var b strings.Builder
	for _, name := range Files {
		data, err := files.ReadFile(name)
		if err != nil {
			panic("kernels: embedded file missing: " + name) // the embed pattern and Files disagree
		}
		b.WriteString("#line 1 \"" + name + "\"\n")
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
