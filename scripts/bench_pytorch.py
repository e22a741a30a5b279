#!/usr/bin/env python3
"""PyTorch eager counterpart of `go run ./cmd/bench`: the same DSE training step, the same JSON line.

Run both on one machine with the same flags and compare pairs_per_s and mfu:

    python3 scripts/bench_pytorch.py --device cuda --precision bf16 --layers 12 --hidden 768 --seq-len 32 --batch 512
    go run ./cmd/bench              --device cuda --precision bf16 --layers 12 --hidden 768 --seq-len 32 --batch 512

A step, as cmd/bench does it: two views of B x T random token ids (every token real, zero token types) through a BERT post-LayerNorm encoder as one batch of 2B rows (random initialisation N(0, 0.02)),
mean pooling, DSE's contrast head Linear(H,H) -> ReLU -> Linear(H,128) without biases, L2 normalisation,
DSE's hard-negative contrastive loss over the in-batch pairs (temperature 0.05; objectives/dse_loss.go),
loss.item(), backward, AdamW (lr 1e-4, weight decay 0.01; encoder and head groups), zero_grad. With
--precision bf16 the forward pass and the loss run under torch.autocast(dtype=torch.bfloat16) over fp32
weights, as convrep's. Attention uses F.scaled_dot_product_attention where this torch has it (2.0 and
later), as convrep uses libtorch's; the batch has no padding, which the host knows, so no mask goes in, as
convrep's encoder passes none for an unpadded batch (models.Input.Unpadded). The JSON line's "attention" is
the kernel torch picks for it (_fused_sdp_choice). Only torch is needed.

--infer is inference instead, as sentence-transformers' encode runs it: torch.inference_mode, the texts' token ids
(--ids: one JSON array a line, as scripts/benchembed's prepare writes them) sorted by length, cut into batches
of --batch, each padded to its longest, mean pooling; the JSON line gives texts/s of the best of --rounds rounds
over every text (after one warm-up round) and the median. --model loads a BERT folder's model.safetensors
(HuggingFace's names), else the weights are random of the shape flags; --precision bf16 runs under CPU or CUDA
autocast; --onnx also exports the pooled encoder with torch.onnx.export (dynamic batch and length) for ONNX
Runtime; --vectors writes the vectors (little-endian float32, in batch order). scripts/bench_embed.sh runs it:

    python3 scripts/bench_pytorch.py --infer --model DIR --ids ids.jsonl --threads 2 --onnx model.onnx
"""
import argparse
import ctypes
import gc
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

DROPOUT, LR, WEIGHT_DECAY, TAU, HEAD_DIM = 0.1, 1e-4, 0.01, 0.05, 128
PEAK_BF16_H100, PEAK_FP32_H100 = 989.0, 67.0  # TFLOP/s, dense, H100/H200 SXM (cmd/internal/benchcmd/flops.go)


def flops_per_pair(layers, hidden, inter, seq):
    """Model FLOPs of one pair, forward and backward, both sentences: cmd/internal/benchcmd/flops.go's formula,
    2 * (6*N*T + 12*L*H*T^2) with N = L*(4H^2 + 2HI) the encoder's matmul weights (PaLM, appendix B)."""
    n = layers * (4 * hidden * hidden + 2 * hidden * inter)
    return 2.0 * (6 * n * seq + 12 * layers * hidden * seq * seq)


class Layer(nn.Module):
    """One post-LayerNorm BERT layer (HuggingFace's BertLayer), as models/block.go."""

    def __init__(self, h, heads, inter):
        super().__init__()
        self.heads, self.dh = heads, h // heads
        self.query, self.key, self.value, self.attn_out = (nn.Linear(h, h) for _ in range(4))
        self.attn_norm, self.out_norm = nn.LayerNorm(h, eps=1e-12), nn.LayerNorm(h, eps=1e-12)
        self.ffn_in, self.ffn_out = nn.Linear(h, inter), nn.Linear(inter, h)
        self.drop = nn.Dropout(DROPOUT)

    def attend(self, q, k, v, keep):
        """keep: [B,1,1,T] booleans (True = attend), or None where no key is padding."""
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                                  dropout_p=DROPOUT if self.training else 0.0)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        if keep is not None:
            scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
        return self.drop(scores.softmax(-1)) @ v

    def forward(self, x, keep):
        b, t, h = x.shape
        split = lambda y: y.view(b, t, self.heads, self.dh).transpose(1, 2)
        ctx = self.attend(split(self.query(x)), split(self.key(x)), split(self.value(x)), keep)
        a = self.attn_norm(self.drop(self.attn_out(ctx.transpose(1, 2).reshape(b, t, h))) + x)
        return self.out_norm(self.drop(self.ffn_out(F.gelu(self.ffn_in(a)))) + a)


class Encoder(nn.Module):
    def __init__(self, vocab, h, layers, heads, inter, positions):
        super().__init__()
        self.word = nn.Embedding(vocab, h, padding_idx=0)
        self.pos, self.types = nn.Embedding(positions, h), nn.Embedding(2, h)
        self.norm, self.drop = nn.LayerNorm(h, eps=1e-12), nn.Dropout(DROPOUT)
        self.layers = nn.ModuleList(Layer(h, heads, inter) for _ in range(layers))
        for m in self.modules():  # HuggingFace's BERT initialisation, as models.New
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)
        with torch.no_grad():
            self.word.weight[0].zero_()

    def forward(self, ids, mask, types, unpadded):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0).expand_as(ids)
        x = self.drop(self.norm(self.word(ids) + self.pos(pos) + self.types(types)))
        keep = None if unpadded else mask[:, None, None, :].bool()  # [B,1,1,T]: True = attend
        for layer in self.layers:
            x = layer(x, keep)
        return x


def dse_loss(z, b, tau):
    """objectives/dse_loss.go's contrast, HardNeg mode, all pairs positive: z = [f1; f2] unit rows [2B,D].
    Per anchor softplus(log Ng - s+/tau) with log Ng = log(2B-2) + LSE(2s/tau) - LSE(s/tau) over the 2B-2
    views other than the anchor and its partner (DSE Eq. 1-3, in log space); the mean over 2B anchors."""
    logits = z @ z.t() / tau
    pos = torch.diagonal(logits, offset=b)
    pos2 = torch.cat([pos, pos])
    self_or_partner = torch.eye(b, dtype=torch.bool, device=z.device).repeat(2, 2)
    neg = logits.masked_fill(self_or_partner, float("-inf"))
    lse = torch.logsumexp(neg, 1)
    log_ng = torch.logsumexp(2 * neg, 1) - lse + math.log(2 * b - 2)
    return F.softplus(log_ng - pos2).mean()


class Setup:
    def __init__(self, a, dev, batch):
        self.a, self.dev, self.batch = a, dev, batch
        self.enc = Encoder(a.vocab, a.hidden, a.layers, a.heads, a.intermediate, max(512, a.seq_len)).to(dev)
        self.head = nn.Sequential(nn.Linear(a.hidden, a.hidden, bias=False), nn.ReLU(),
                                  nn.Linear(a.hidden, HEAD_DIM, bias=False)).to(dev)
        # --compile: the peer issue 22 names, torch.compile over forward and loss (Inductor's fused kernels) with
        # the fused AdamW kernel; eager keeps torch's default AdamW (foreach on CUDA).
        fused = {"fused": True} if a.compile and dev.type == "cuda" else {}
        self.opt = torch.optim.AdamW([{"params": self.enc.parameters()}, {"params": self.head.parameters()}],
                                     lr=LR, weight_decay=WEIGHT_DECAY, **fused)
        self.enc.train()
        self.forward = torch.compile(self.loss) if a.compile else self.loss

    def loss(self, ids, mask, unpadded):
        b = self.batch
        with torch.autocast(device_type=self.dev.type, dtype=torch.bfloat16, enabled=self.a.precision == "bf16"):
            e = self.enc(ids, mask, torch.zeros_like(ids), unpadded)
            m = mask.unsqueeze(-1).to(e.dtype)
            pooled = (e * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return dse_loss(F.normalize(self.head(pooled), dim=1), b, TAU)

    def step(self):
        a, b = self.a, self.batch
        ids = torch.randint(0, a.vocab, (2 * b, a.seq_len), device=self.dev)  # both views, stacked
        mask = torch.ones_like(ids)  # every token real: the host knows it, as convrep's BatchInput does
        loss = self.forward(ids, mask, True)
        value = loss.item()
        if not math.isfinite(value):
            raise RuntimeError(f"loss is {value}")
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        return value

    def sync(self):
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)


def attention_backend(a, dev):
    """The kernel torch picks for the encoder's attention, unmasked (torch._fused_sdp_choice's SDPBackend),
    named as convrep's models.AttentionBackends names libtorch's choice."""
    if not hasattr(torch, "_fused_sdp_choice"):
        return "explicit (matmul, mask, softmax: this torch has no scaled_dot_product_attention)"
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
    q = torch.zeros(2 * a.batch, a.heads, a.seq_len, a.hidden // a.heads, dtype=dtype, device=dev)
    names = {-1: "none", 0: "math", 1: "flash", 2: "memory-efficient", 3: "cudnn", 4: "overrideable"}
    choice = torch._fused_sdp_choice(q, q, q, None, DROPOUT)
    return names.get(choice, f"backend {choice}") + " (no mask)"


def blas_core():
    """OpenBLAS's name for the kernel set it chose ("Zen", "SkylakeX", ...), as convrep's blas.Core: read from
    the OpenBLAS torch loaded, "" when torch's BLAS is not OpenBLAS."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libopenblas" in line}
    if not paths:
        return ""
    corename = ctypes.CDLL(sorted(paths)[0]).openblas_get_corename
    corename.restype = ctypes.c_char_p
    return corename().decode()


def is_out_of_memory(e):
    msg = str(e).lower()
    return "out of memory" in msg or "can't allocate memory" in msg


def find_max_batch(a, dev):
    """Doubles --batch up to --max-batch until out of memory; returns the largest batch that fitted."""
    best, b = 0, a.batch
    while b <= a.max_batch:
        s = None
        try:
            s = Setup(a, dev, b)
            s.step()
            s.step()
            s.sync()
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
            if not is_out_of_memory(e):
                raise
            if best == 0:
                raise SystemExit(f"find max batch: even the first batch {b} does not fit: {e}")
            break
        finally:
            del s
            gc.collect()
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        best, b = b, 2 * b
    return best


def read_safetensors(path):
    """The tensors of a .safetensors file by name (the format's 8-byte header length, JSON header, raw data)."""
    dtypes = {"F32": torch.float32, "I64": torch.int64, "F16": torch.float16, "BF16": torch.bfloat16}
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = bytearray(f.read())
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        start, end = t["data_offsets"]
        out[name] = torch.frombuffer(data[start:end], dtype=dtypes[t["dtype"]]).reshape(t["shape"]).clone() \
            if end > start else torch.zeros(t["shape"], dtype=dtypes[t["dtype"]])
    return out


def load_bert(enc, path):
    """Copies a HuggingFace BERT's weights (model.safetensors, with or without the "bert." prefix) into enc."""
    sd = {k.removeprefix("bert."): v for k, v in read_safetensors(path).items()}
    names = {"embeddings.word_embeddings": "word", "embeddings.position_embeddings": "pos",
             "embeddings.token_type_embeddings": "types", "embeddings.LayerNorm": "norm"}
    for i in range(len(enc.layers)):
        hf, ours = f"encoder.layer.{i}.", f"layers.{i}."
        names.update({hf + "attention.self.query": ours + "query", hf + "attention.self.key": ours + "key",
                      hf + "attention.self.value": ours + "value", hf + "attention.output.dense": ours + "attn_out",
                      hf + "attention.output.LayerNorm": ours + "attn_norm", hf + "intermediate.dense": ours + "ffn_in",
                      hf + "output.dense": ours + "ffn_out", hf + "output.LayerNorm": ours + "out_norm"})
    state = {}
    for hf, ours in names.items():
        for leaf in ("weight", "bias"):
            if f"{hf}.{leaf}" in sd:
                state[f"{ours}.{leaf}"] = sd[f"{hf}.{leaf}"]
    enc.load_state_dict(state, strict=True)


class Pooled(nn.Module):
    """The encoder and mean pooling over real tokens: what convrep's Embedder returns, as ONNX exports it."""

    def __init__(self, enc):
        super().__init__()
        self.enc = enc

    def forward(self, ids, mask, types):
        e = self.enc(ids, mask, types, False)
        m = mask.unsqueeze(-1).to(e.dtype)
        return (e * m).sum(1) / m.sum(1).clamp(min=1e-9)


def infer(a, dev):
    """--infer: texts/s of inference over length-sorted batches of the ids in --ids."""
    with open(a.ids) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows.sort(key=len)  # stable: shortest first, as convrep's EmbedAll (sentence-transformers: longest first)
    positions = 512
    if a.model:
        with open(a.model + "/config.json") as f:
            c = json.load(f)
        a.layers, a.hidden, a.heads, a.intermediate = (c["num_hidden_layers"], c["hidden_size"],
                                                       c["num_attention_heads"], c["intermediate_size"])
        a.vocab, positions = c["vocab_size"], c["max_position_embeddings"]
    torch.manual_seed(a.seed)
    enc = Encoder(a.vocab, a.hidden, a.layers, a.heads, a.intermediate, positions)
    if a.model:
        load_bert(enc, a.model + "/model.safetensors")
    model = Pooled(enc).to(dev).eval()

    def batch(rs):
        width = max(len(r) for r in rs)
        ids = torch.tensor([r + [0] * (width - len(r)) for r in rs], device=dev)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rs], device=dev)
        return ids, mask, torch.zeros_like(ids)

    if a.onnx:
        with torch.no_grad():
            torch.onnx.export(model, batch(rows[-2:]), a.onnx, input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["embedding"], opset_version=14,
                              dynamic_axes={n: {0: "batch", 1: "seq"} for n in ["input_ids", "attention_mask", "token_type_ids"]}
                              | {"embedding": {0: "batch"}})

    def one_round():
        out = []
        start = time.perf_counter()
        with torch.inference_mode(), torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            for i in range(0, len(rows), a.batch):
                out.append(model(*batch(rows[i:i + a.batch])).float().cpu())
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return time.perf_counter() - start, out

    one_round()
    rates, out = [], None
    for _ in range(a.rounds):
        took, out = one_round()
        rates.append(len(rows) / took)
    if a.vectors:
        with open(a.vectors, "wb") as f:
            f.write(torch.cat(out).numpy().astype("<f4").tobytes())
    rates.sort()
    print(json.dumps({"system": f"pytorch {a.precision}", "model": a.name or a.model, "texts": len(rows),
                      "tokens": sum(map(len, rows)), "batch": a.batch, "threads": torch.get_num_threads(),
                      "rounds": a.rounds, "texts_per_s": round(rates[-1], 1),
                      "median_texts_per_s": round(rates[len(rates) // 2], 1), "torch": torch.__version__,
                      "layers": a.layers, "hidden": a.hidden}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in [("layers", 4), ("hidden", 256), ("heads", 0), ("intermediate", 0), ("vocab", 30522),
                          ("batch", 64), ("steps", 20), ("warmup", 3), ("threads", 0), ("seed", 42),
                          ("max-batch", 1024), ("rounds", 3)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--seq-len", "--seq", dest="seq_len", type=int, default=32)
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--peak-tflops", type=float, default=0.0,
                   help=f"0 = on a GPU {PEAK_BF16_H100:g} for bf16, {PEAK_FP32_H100:g} for fp32 (H100/H200 SXM); "
                        "on a CPU none (mfu is null)")
    p.add_argument("--find-max-batch", action="store_true")
    p.add_argument("--compile", action="store_true", help="forward and loss under torch.compile, fused AdamW on CUDA")
    p.add_argument("--trace", default="", help="after the timed steps, profile one more with torch.profiler and write its "
                   "Chrome trace (Kineto's kernels and operators) to this file; scripts/kernel_breakdown.py sums it")
    p.add_argument("--infer", action="store_true", help="time inference over --ids instead of a training step")
    p.add_argument("--ids", default="", help="--infer: token ids, one JSON array a line")
    p.add_argument("--model", default="", help="--infer: a BERT folder (config.json, model.safetensors)")
    p.add_argument("--onnx", default="", help="--infer: also export the pooled encoder to this ONNX file")
    p.add_argument("--vectors", default="", help="--infer: write the vectors here (little-endian float32)")
    p.add_argument("--name", default="", help="--infer: the model's name in the JSON line")
    a = p.parse_args()
    if a.infer:
        if not a.ids:
            p.error("--infer needs --ids")
        if a.threads > 0:
            torch.set_num_threads(a.threads)
        a.intermediate = a.intermediate or 4 * a.hidden
        a.heads = a.heads or max(1, a.hidden // 64)
        infer(a, torch.device(a.device))
        return
    a.intermediate = a.intermediate or 4 * a.hidden
    a.heads = a.heads or max(1, a.hidden // 64)
    if a.hidden % a.heads:
        p.error(f"--heads = {a.heads} does not divide --hidden = {a.hidden}")
    if a.batch < 2:
        p.error(f"--batch = {a.batch}: a pair needs in-batch negatives (at least 2)")
    if a.steps < 1:
        p.error(f"--steps = {a.steps}: must be at least 1")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    if a.find_max_batch:
        a.batch = find_max_batch(a, dev)
    torch.manual_seed(a.seed)
    s = Setup(a, dev, a.batch)
    for _ in range(a.warmup):
        s.step()
    s.sync()
    start, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(a.steps):
        loss = s.step()
    s.sync()
    step_s = (time.perf_counter() - start) / a.steps
    cpu_s = (time.process_time() - cpu0) / a.steps
    pairs_per_s = a.batch / step_s
    fpp = flops_per_pair(a.layers, a.hidden, a.intermediate, a.seq_len)
    peak = a.peak_tflops or (0.0 if dev.type != "cuda" else PEAK_BF16_H100 if a.precision == "bf16" else PEAK_FP32_H100)
    print(json.dumps({"impl": "pytorch-compile" if a.compile else "pytorch", "step_s": step_s, "cpu_s": cpu_s, "pairs_per_s": pairs_per_s,
                      "tokens_per_s": 2 * a.batch * a.seq_len / step_s, "loss": loss, "flops_per_pair": fpp,
                      "model_tflops": fpp * pairs_per_s / 1e12, "peak_tflops": peak or None,
                      "mfu": fpp * pairs_per_s / (peak * 1e12) if peak else None, "precision": a.precision,
                      "layers": a.layers, "hidden": a.hidden, "heads": a.heads, "intermediate": a.intermediate,
                      "vocab": a.vocab, "batch": a.batch, "seq": a.seq_len, "steps": a.steps, "warmup": a.warmup,
                      "threads": torch.get_num_threads(), "device": a.device, "blas_core": blas_core(),
                      "attention": attention_backend(a, dev)}), flush=True)
    if a.trace:  # after the line, so that a profiler that fails costs the trace only
        activities = [torch.profiler.ProfilerActivity.CPU]
        if dev.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as prof:
            s.step()
            s.sync()
        prof.export_chrome_trace(a.trace)


if __name__ == "__main__":
    main()
