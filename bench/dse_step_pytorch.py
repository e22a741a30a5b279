#!/usr/bin/env python3
"""PyTorch eager reference for `go run ./cmd/bench`: the same DSE training step, for comparison only.

convrep never runs this file. It needs Debian's python3-torch (1.13.1, the libtorch convrep links):

    /usr/bin/python3 bench/dse_step_pytorch.py --layers 4 --hidden 256 --heads 4 --batch 64 --seq 32 --steps 20

A step, as cmd/bench does it: two views of B x T random token ids (all-ones mask, zero token types) through
a BERT-like post-LayerNorm encoder as one batch of 2B rows, mean pooling, DSE's contrastive head
Linear(H,H,no bias)-ReLU-Linear(H,128,no bias), F.normalize, HardConLoss "HardNeg" (tau 0.05) as in the DSE
authors' code, loss.item(), backward, torch.optim.Adam (encoder and head groups, lr 1e-4), zero_grad().
It prints the same JSON line as cmd/bench, with "impl": "pytorch".
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

DROPOUT, LR, TAU, HEAD_DIM = 0.1, 1e-4, 0.05, 128


class Layer(nn.Module):
    """One post-LN transformer block, HuggingFace's BertLayer math."""

    def __init__(self, h, heads, inter):
        super().__init__()
        self.heads, self.dh = heads, h // heads
        self.query, self.key, self.value, self.attn_out = (nn.Linear(h, h) for _ in range(4))
        self.attn_norm, self.out_norm = nn.LayerNorm(h, eps=1e-12), nn.LayerNorm(h, eps=1e-12)
        self.ffn_in, self.ffn_out = nn.Linear(h, inter), nn.Linear(inter, h)
        self.drop = nn.Dropout(DROPOUT)

    def forward(self, x, mask_add):
        b, t, h = x.shape
        split = lambda y: y.view(b, t, self.heads, self.dh).transpose(1, 2)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.dh) + mask_add
        probs = self.drop(scores.softmax(-1))
        ctx = (probs @ v).transpose(1, 2).reshape(b, t, h)
        a = self.attn_norm(self.drop(self.attn_out(ctx)) + x)
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
                m.weight.data.normal_(0.0, 0.02)
            if isinstance(m, nn.Linear):
                m.bias.data.zero_()
        self.word.weight.data[0].zero_()

    def forward(self, ids, mask, types):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0).expand_as(ids)
        x = self.drop(self.norm(self.word(ids) + self.pos(pos) + self.types(types)))
        mask_add = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, mask_add)
        return x


def hard_con_loss(f1, f2, tau):
    """HardConLoss (HardNeg, all pairs positive) of the DSE code, written from its description."""
    b = f1.shape[0]
    z = torch.cat([f1, f2], 0)
    sim = torch.exp(z @ z.t() / tau)  # [2B,2B]
    pos = torch.exp((f1 * f2).sum(-1) / tau)
    pos = torch.cat([pos, pos], 0)
    keep = ~torch.eye(b, dtype=torch.bool, device=z.device).repeat(2, 2)  # drop self and partner
    neg = sim.masked_select(keep).view(2 * b, -1)
    ng = (neg * neg).sum(-1) / neg.mean(-1)  # each negative weighted by its relative similarity
    return -torch.log(pos / (pos + ng)).mean()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in [("layers", 4), ("hidden", 256), ("heads", 4), ("intermediate", 0), ("vocab", 30522),
                          ("batch", 64), ("seq", 32), ("steps", 20), ("warmup", 3), ("threads", 0), ("seed", 42)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    inter = a.intermediate or 4 * a.hidden
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    enc = Encoder(a.vocab, a.hidden, a.layers, a.heads, inter, max(512, a.seq)).to(dev)
    head = nn.Sequential(nn.Linear(a.hidden, a.hidden, bias=False), nn.ReLU(),
                         nn.Linear(a.hidden, HEAD_DIM, bias=False)).to(dev)
    opt = torch.optim.Adam([{"params": enc.parameters(), "lr": LR}, {"params": head.parameters(), "lr": LR}])
    enc.train()

    def step():
        ids = torch.randint(0, a.vocab, (2 * a.batch, a.seq), device=dev)  # both views, stacked
        mask = torch.ones_like(ids)
        e = enc(ids, mask, torch.zeros_like(ids))
        m = mask.unsqueeze(-1).float()
        pooled = (e * m).sum(1) / m.sum(1).clamp(min=1e-9)
        z = F.normalize(head(pooled), dim=1)
        loss = hard_con_loss(z[: a.batch], z[a.batch:], TAU)
        value = loss.item()
        if not math.isfinite(value):
            raise SystemExit(f"loss is {value}")
        loss.backward()
        opt.step()
        opt.zero_grad()
        return value

    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(a.warmup):
        step()
    sync()
    start, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(a.steps):
        loss = step()
    sync()
    step_s = (time.perf_counter() - start) / a.steps
    cpu_s = (time.process_time() - cpu0) / a.steps
    print(json.dumps({"impl": "pytorch", "step_s": step_s, "cpu_s": cpu_s, "pairs_per_s": a.batch / step_s,
                      "tokens_per_s": 2 * a.batch * a.seq / step_s, "loss": loss, "layers": a.layers,
                      "hidden": a.hidden, "heads": a.heads, "intermediate": inter, "vocab": a.vocab,
                      "batch": a.batch, "seq": a.seq, "steps": a.steps, "warmup": a.warmup,
                      "threads": torch.get_num_threads(), "device": a.device}))


if __name__ == "__main__":
    main()
