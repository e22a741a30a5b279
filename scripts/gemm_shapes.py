#!/usr/bin/env python3
"""The twelve GEMMs of one BERT layer's training step, timed one by one on a GPU: what cuBLAS can do at each
shape on its own, beside which the step's kernels (scripts/kernel_breakdown.py) are read.

A layer's four linears (the joined query/key/value projection, the attention output, the feed-forward's two)
each make one GEMM forward, Y = X·Wᵀ, and two backward, dX = dY·W and dW = dYᵀ·X, in the layouts torch's
linear uses. Each is timed with CUDA events over --iters calls after a warm-up, in bf16 (or fp32), and given
as ms and TFLOP/s; with --tunable also under TunableOp (torch.cuda.tunable, PyTorch 2.3 and later), which
tries cuBLAS's and cuBLASLt's solutions for the shape and keeps the fastest. The forward GEMMs are also timed
with their bias in the epilogue (torch.addmm, cuBLASLt's bias epilogue) against a GEMM then an add, which says
whether an epilogue would pay. Prints a Markdown table, then one JSON line per GEMM. Only torch is needed.

    python3 scripts/gemm_shapes.py --tokens 65536 --hidden 768 --intermediate 3072 --tunable
"""
import argparse
import json

import torch


def shapes(tokens, h, inter):
    """(name, M, N, K, a, b): the GEMM C[M,N] = A[M,K]·B[K,N] and how to make A and B in torch's layouts."""
    out = []
    for name, n_out, n_in in [("qkv", 3 * h, h), ("attn_out", h, h), ("ffn_in", inter, h), ("ffn_out", h, inter)]:
        # weight W [n_out, n_in], input X [tokens, n_in], output gradient dY [tokens, n_out]
        out.append((f"{name} forward", tokens, n_out, n_in, ("x", tokens, n_in), ("w^T", n_out, n_in)))
        out.append((f"{name} grad input", tokens, n_in, n_out, ("dy", tokens, n_out), ("w", n_out, n_in)))
        out.append((f"{name} grad weight", n_out, n_in, tokens, ("dy^T", tokens, n_out), ("x", tokens, n_in)))
    return out


def operand(spec, dtype, dev):
    kind, rows, cols = spec
    t = torch.randn(rows, cols, dtype=dtype, device=dev) * 0.02
    return t.t() if kind.endswith("^T") else t


def time_ms(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def tunable(on):
    """Turns TunableOp (tuning included) on or off; False where this torch has none."""
    t = getattr(torch.cuda, "tunable", None)
    if t is None:
        return False
    t.enable(on)
    t.tuning_enable(on)
    if on:
        t.set_max_tuning_duration(30)  # ms per solution tried, to keep the run short
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=65536, help="rows: batch x 2 views x sequence length")
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--intermediate", type=int, default=3072)
    p.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--tunable", action="store_true", help="also time each GEMM under TunableOp")
    a = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gemm_shapes: no CUDA device")
    dev, dtype = torch.device("cuda"), torch.bfloat16 if a.precision == "bf16" else torch.float32
    rows = []
    for name, m, n, k, sa, sb in shapes(a.tokens, a.hidden, a.intermediate):
        A, B = operand(sa, dtype, dev), operand(sb, dtype, dev)
        flops = 2.0 * m * n * k
        row = {"gemm": name, "m": m, "n": n, "k": k, "ms": time_ms(lambda: torch.mm(A, B), a.iters)}
        row["tflops"] = flops / row["ms"] / 1e9
        if name.endswith("forward"):
            bias = torch.zeros(n, dtype=dtype, device=dev)
            row["ms_mm_then_add"] = time_ms(lambda: torch.mm(A, B).add_(bias), a.iters)
            row["ms_bias_epilogue"] = time_ms(lambda: torch.addmm(bias, A, B), a.iters)
        if a.tunable:
            if tunable(True):
                try:
                    row["ms_tunable"] = time_ms(lambda: torch.mm(A, B), a.iters)
                finally:
                    tunable(False)
            else:
                row["ms_tunable"] = None
        rows.append(row)
        del A, B
    fmt = lambda v: "n/a" if v is None else f"{v:.3f}"
    print(f"{a.tokens} tokens, hidden {a.hidden}, intermediate {a.intermediate}, {a.precision}, "
          f"{torch.cuda.get_device_name(dev)}, torch {torch.__version__}\n")
    print("| GEMM | M×N×K | ms | TFLOP/s | TunableOp ms | GEMM + add ms | bias epilogue ms |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['gemm']} | {r['m']}×{r['n']}×{r['k']} | {r['ms']:.3f} | {r['tflops']:.0f} | "
              f"{fmt(r.get('ms_tunable'))} | {fmt(r.get('ms_mm_then_add'))} | {fmt(r.get('ms_bias_epilogue'))} |")
    total = sum(r["ms"] for r in rows)
    print(f"\nOne layer's twelve GEMMs: {total:.2f} ms alone; a 12-layer step: {12 * total:.1f} ms.\n")
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
