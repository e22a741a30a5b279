// ONNX Runtime's side of scripts/bench_embed.sh: the pooled encoder that bench_pytorch.py --infer --onnx
// exported, on the CPU through npm's onnxruntime-node, over the same token ids in the same batches.
//
//   node scripts/bench_ort.mjs --ort DIR --onnx model.onnx --ids ids.jsonl --batch 64 --threads 2 --rounds 3 \
//     [--vectors out.f32] [--name NAME]
//
// --ort is the folder onnxruntime-node is installed in (its node_modules). The ids file has one JSON array a
// line, sorted by length; batches of --batch are cut from it in order, each padded to its longest with 0.
// Default graph optimisations, one inter-op thread, --threads intra-op threads. It prints one JSON line:
// texts/s of the best of --rounds rounds over every text (after one warm-up round) and the median.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

function flags(argv) {
  const out = { batch: "64", threads: "2", rounds: "3", vectors: "", name: "" };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ["ort", "onnx", "ids"]) if (!out[k]) throw new Error(`--${k} is required`);
  return out;
}

const a = flags(process.argv.slice(2));
const ort = createRequire(join(a.ort, "node_modules", "x.js"))("onnxruntime-node");
const rows = readFileSync(a.ids, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
const batch = Number(a.batch);

const session = await ort.InferenceSession.create(a.onnx, {
  intraOpNumThreads: Number(a.threads),
  interOpNumThreads: 1,
  executionProviders: ["cpu"],
});

function feeds(rs) {
  const width = Math.max(...rs.map((r) => r.length));
  const ids = new BigInt64Array(rs.length * width);
  const mask = new BigInt64Array(rs.length * width);
  rs.forEach((r, i) => r.forEach((id, j) => { ids[i * width + j] = BigInt(id); mask[i * width + j] = 1n; }));
  const dims = [rs.length, width];
  return {
    input_ids: new ort.Tensor("int64", ids, dims),
    attention_mask: new ort.Tensor("int64", mask, dims),
    token_type_ids: new ort.Tensor("int64", new BigInt64Array(rs.length * width), dims),
  };
}

async function round() {
  const out = [];
  const start = process.hrtime.bigint();
  for (let i = 0; i < rows.length; i += batch) {
    const r = await session.run(feeds(rows.slice(i, i + batch)));
    out.push(r.embedding.data);
  }
  return [Number(process.hrtime.bigint() - start) / 1e9, out];
}

await round();
const rates = [];
let vecs;
for (let i = 0; i < Number(a.rounds); i++) {
  const [took, out] = await round();
  rates.push(rows.length / took);
  vecs = out;
}
if (a.vectors) {
  writeFileSync(a.vectors, Buffer.concat(vecs.map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength))));
}
rates.sort((x, y) => x - y);
const version = JSON.parse(readFileSync(join(a.ort, "node_modules", "onnxruntime-node", "package.json"), "utf8")).version;
console.log(JSON.stringify({
  system: "onnxruntime fp32", model: a.name, texts: rows.length, tokens: rows.reduce((s, r) => s + r.length, 0),
  batch, threads: Number(a.threads), rounds: Number(a.rounds), texts_per_s: Math.round(rates.at(-1) * 10) / 10,
  median_texts_per_s: Math.round(rates[Math.floor(rates.length / 2)] * 10) / 10, onnxruntime: version,
}));
