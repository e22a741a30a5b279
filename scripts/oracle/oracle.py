#!/usr/bin/env python3
"""Oracle fixtures for convrep's tests, computed by the authors' released code (issue 23).

A tool, not part of `make test`: it writes the test data that objectives/dse/oracle_test.go and
objectives/rcl/oracle_test.go read (objectives/*/testdata/oracle/). It imports, unmodified:

  - amazon-research/dse at f645d74 (pretrain/: PSCBert, HardConLoss, get_optimizer, PSCTrainer, PairSamples);
  - jasonwu0731/ToD-BERT at 0c36e31 (my_tod_pretraining.py: mask_for_response_selection, mask_tokens);
  - transformers v4.29.2 and huggingface_hub v0.15.1 from their source trees (src/ on PYTHONPATH);
  - Debian's python3-torch (1.13.1), python3-numpy, python3-regex, python3-requests, python3-yaml,
    python3-filelock, python3-packaging, python3-tqdm. No `tokenizers` package: the slow BertTokenizer.

Shims, none of which changes a computed number (see shim()):
  1. Tensor.cuda and Module.cuda return their object: PSCTrainer calls .cuda() unconditionally; this runs on CPU.
  2. Stub modules tensorboardX (SummaryWriter), sklearn.preprocessing (normalize) and pandas: imported at the
     top of the DSE code (utils/utils.py, training.py, dataloader/dataloader.py) and of my_tod_pretraining.py,
     used on no path run here.
Without the tokenizers package, AutoTokenizer is called with use_fast=False (the slow BertTokenizer; the
authors' get_bert_config_tokenizer would get BertTokenizerFast, which gives BERT's vocabulary the same ids).

Usage (paths to the extracted upstream trees and to ../shared/fixtures/tiny-bert):

  PYTHONPATH=$TF/src:$HUB/src python3 scripts/oracle/oracle.py \
      --dse $DSE --todbert $TODBERT --model ../shared/fixtures/tiny-bert --out objectives

What it computes:
  dse/testdata/oracle/trajectory.{json,safetensors}: 10 steps of DSE on 10 2-1 pairs (queries of two
    utterances, §4.4) with the authors' loop body (PSCTrainer.train: prepare_pairwise_input_multiturn_concatenate,
    then train_step), batch size 4 from their DataLoader (shuffle=True, drop_last=False: batches of 4, 4, 2),
    max_length 32, lr 1e-6 and lr_scale 100, τ 0.05, HardNeg, dropout 0, seed 2: the token ids each pair
    gets, the batch order, the head as from_pretrained drew it, the loss of every step, and the final weights
    (every tensor but the word embeddings, whose rows of the ids used are kept instead).
  rcl/testdata/oracle/batches.{json,safetensors}: TOD-BERT's RCL + MLM on 3 fixed batches of dialogues
    flattened with [USR]/[SYS] (tokens added and embeddings resized as their train() does), split by
    mask_for_response_selection and masked by mask_tokens, the loss lines of train() (my_tod_pretraining.py
    lines 420-448) written out, dropout 0: the inputs, the labels, the two new embedding rows and each loss.
"""
import argparse
import json
import os
import random
import struct
import sys
import types

import numpy as np
import torch


def shim():
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    tbx = types.ModuleType("tensorboardX")
    tbx.SummaryWriter = object
    sys.modules.setdefault("tensorboardX", tbx)
    sk = types.ModuleType("sklearn")
    skp = types.ModuleType("sklearn.preprocessing")
    skp.normalize = None
    sk.preprocessing = skp
    sys.modules.setdefault("sklearn", sk)
    sys.modules.setdefault("sklearn.preprocessing", skp)
    sys.modules.setdefault("pandas", types.ModuleType("pandas"))


def write_safetensors(path, tensors):
    """The safetensors layout: u64 header length, JSON header, then the tensors in name order."""
    names = sorted(tensors)
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in names:
        t = tensors[name].detach().contiguous().cpu()
        dtype = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}[t.dtype]
        b = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# The tiny corpus: 2-1 pairs as convrep builds them (two utterances joined by " [SEP] ", the next one as the
# response). Pairs 0-2 are over the authors' 57-word budget (int(0.9 × 2 × 32)); pair 1's last words are long
# numbers, so its 57 words still make more than 64 tokens and the tokenizer cuts its end; pair 9's response
# is over 32 tokens.
FILLER = ("i would like to book a table for two people at a cheap restaurant in the centre of town tonight "
          "and please make sure it serves italian food because my friend does not eat anything else at all")
DSE_PAIRS = [
    (FILLER + " [SEP] sure , i have three places that match , do you have a preferred area or price range ?",
     "the centre please , and cheap if you can ."),
    ("can you give me the phone numbers of the places you found ? [SEP] " + FILLER +
     " the numbers are 01223323737 01223352500 01223355166 01223362372 01223357187 01223307030 01223337766",
     "thank you , that is all i needed today ."),
    ("hello [SEP] " + " ".join(["i need a train from cambridge to london on friday morning"] * 6),
     "there are 12 trains , the first leaves at 05:00 ."),
    ("i want to find a hotel with free parking [SEP] the acorn guest house has free parking and wifi .",
     "great , can you book it for three nights ?"),
    ("is there a museum in the west ? [SEP] yes , the cafe jello gallery is in the west and free to enter .",
     "what is the postcode and address of the gallery ?"),
    ("book a taxi to the station please [SEP] where will you be departing from , and at what time ?",
     "from the hotel at 7 : 30 tomorrow morning ."),
    ("i am looking for an expensive chinese restaurant [SEP] hakka is expensive and serves chinese food .",
     "please book a table for 4 at 18:00 on sunday ."),
    ("what attractions are in the centre ? [SEP] there are 44 attractions , do you prefer a type ?",
     "a college would be nice , any will do ."),
    ("i need a place to stay in the north [SEP] there are 13 guest houses and 2 hotels in the north .",
     "a guest house with 4 stars please ."),
    ("can you help me find a hospital ? [SEP] addenbrookes hospital is on hills rd , cambridge .",
     "thanks . " + " ".join(["could you also tell me the phone number and the postcode of the hospital"] * 3)),
]


def dse_oracle(a, out):
    sys.path.insert(0, os.path.join(a.dse, "pretrain"))
    import torch.utils.data as util_data
    from transformers import AutoTokenizer
    from dataloader.dataloader import PairSamples
    from main import get_args
    from models.Transformers import PSCBert
    from training import PSCTrainer
    from utils.optimizer import get_optimizer
    from utils.utils import set_global_random_seed

    args = get_args(["--bert", "bertbase", "--max_length", "32", "--batch_size", "4", "--lr", "1e-06",
                     "--lr_scale", "100", "--temperature", "0.05", "--contrast_type", "HardNeg",
                     "--feat_dim", "128", "--num_turn", "2", "--seed", "2", "--epochs", "4"])
    set_global_random_seed(args.seed)  # main.run
    # main.run's calls, with the tiny BERT's folder for MODEL_CLASS[args.bert] and dropout 0.
    # use_fast=False: without the tokenizers package the fast class is a stub (utils/optimizer.py's
    # get_bert_config_tokenizer would get BertTokenizerFast, whose ids for BERT's vocabulary are the same).
    tokenizer = AutoTokenizer.from_pretrained(a.model, use_fast=False)
    model = PSCBert.from_pretrained(a.model, feat_dim=args.feat_dim, hidden_dropout_prob=0.0,
                                    attention_probs_dropout_prob=0.0)
    head0 = {n: p.detach().clone() for n, p in model.contrast_head.named_parameters()}
    optimizer = get_optimizer(model, args)
    model = torch.nn.DataParallel(model)
    text1, text2 = [q for q, _ in DSE_PAIRS], [r for _, r in DSE_PAIRS]
    # dataloader.pair_loader_csv's loader, over the pairs given here (num_workers 0: the order is the sampler's).
    loader = util_data.DataLoader(PairSamples(text1, text2, [1] * len(text1)), batch_size=args.batch_size,
                                  shuffle=True)
    trainer = PSCTrainer(model, tokenizer, optimizer, loader, args)

    # The ids each pair gets, in pair order (the function is deterministic).
    ids, mask, _ = trainer.prepare_pairwise_input_multiturn_concatenate(
        {"text1": text1, "text2": text2, "pairsimi": torch.ones(len(text1), dtype=torch.long)})
    tensors, index = {}, {t: i for i, t in enumerate(text1)}
    query = ids[:, :-1, :].reshape(len(text1), -1)
    qmask = mask[:, :-1, :].reshape(len(text1), -1)
    pairs = []
    for i in range(len(text1)):
        pairs.append({"query": text1[i], "response": text2[i],
                      "query_ids": query[i][qmask[i] == 1].tolist(),
                      "response_ids": ids[i, -1][mask[i, -1] == 1].tolist()})

    # PSCTrainer.train's loop body, losses kept.
    model.train()
    losses, order, step = [], [], 0
    for epoch in range(args.epochs):
        for batch in loader:
            if step == 10:
                break
            input_ids, attention_mask, pairsimi = trainer.prepare_pairwise_input_multiturn_concatenate(batch)
            step_losses = trainer.train_step(input_ids, attention_mask, pairsimi)
            losses.append(step_losses["instdisc_loss"].item())
            order.append([index[t] for t in batch["text1"]])
            step += 1
    m = model.module
    used = sorted({t for p in pairs for t in p["query_ids"] + p["response_ids"]})
    for n, p in m.named_parameters():
        if n == "bert.embeddings.word_embeddings.weight":
            tensors["final.word_embedding_rows"] = p.detach()[used]
        else:
            tensors["final." + n] = p.detach()
    for n, p in head0.items():
        tensors["init.contrast_head." + n] = p
    meta = {"source": "amazon-research/dse f645d74, transformers v4.29.2, torch " + torch.__version__,
            "args": {k: v for k, v in vars(args).items() if isinstance(v, (int, float, str))},
            "pairs": pairs, "order": order, "losses": losses, "used_ids": used,
            "initializer_range": m.config.initializer_range}
    d = os.path.join(out, "dse", "testdata", "oracle")
    os.makedirs(d, exist_ok=True)
    write_safetensors(os.path.join(d, "trajectory.safetensors"), tensors)
    with open(os.path.join(d, "trajectory.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print("dse losses", losses)


RCL_DIALOGUES = [
    ["i need a cheap hotel in the north", "the city centre north b and b is cheap , shall i book it ?",
     "yes for 2 nights please", "booked , your reference is 7gawk763 .", "thanks , bye"],
    ["is there a train to ely on monday ?", "tr1234 leaves at 09:15 .", "book one seat please",
     "done , 4.40 pounds payable at the station .", "great"],
    ["find me an italian restaurant", "there are 15 , which area ?", "centre please",
     "pizza hut city centre is cheap and nice .", "what is the address ?", "regent street city centre ."],
    ["i want a taxi", "where to ?", "the museum of archaelogy", "what time ?", "after 10:15",
     "a white ford will pick you up .", "thank you", "you are welcome"],
    ["what is the weather like ?", "it is sunny today .", "and tomorrow ?", "rain is expected ."],
    ["how do i get to the hospital ?", "addenbrookes is on hills rd .", "phone number ?", "01223245151 ."],
]


def rcl_oracle(a, out):
    # ToD-BERT has its own top-level utils and models packages: forget DSE's before importing it.
    for name in list(sys.modules):
        if name.split(".")[0] in ("utils", "models", "training", "main", "dataloader"):
            del sys.modules[name]
    sys.path[:] = [a.todbert] + [p for p in sys.path if not p.startswith(os.path.join(a.dse, ""))]
    from transformers import BertForMaskedLM, BertTokenizer
    import my_tod_pretraining as tod

    targs = argparse.Namespace(usr_token="[USR]", sys_token="[SYS]", mlm_probability=0.15,
                               nb_addition_negresponse_per_sample=0, negative_sampling_by_kmeans=False,
                               device=torch.device("cpu"))
    tokenizer = BertTokenizer.from_pretrained(a.model)
    tokenizer.add_tokens([targs.sys_token, targs.usr_token])  # my_tod_pretraining.main
    torch.manual_seed(7)
    random.seed(7)
    np.random.seed(7)
    model = BertForMaskedLM.from_pretrained(a.model, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model.resize_token_embeddings(len(tokenizer))  # train()
    xeloss = torch.nn.CrossEntropyLoss()  # train()
    model.train()
    tensors, batches = {}, []
    vocab = model.config.vocab_size
    tensors["added_rows"] = model.bert.embeddings.word_embeddings.weight.detach()[vocab - 2:]
    tensors["added_bias"] = model.cls.predictions.bias.detach()[vocab - 2:]
    for bi, rows in enumerate([RCL_DIALOGUES[0:2], RCL_DIALOGUES[2:5], RCL_DIALOGUES[3:6]]):
        # A dialogue as TOD-BERT's usdl loader flattens it: [CLS] [USR] u1 [SYS] s1 ... [SEP], 0-padded.
        seqs = []
        for d in rows:
            text = " ".join(("[USR] " if i % 2 == 0 else "[SYS] ") + u for i, u in enumerate(d))
            seqs.append(tokenizer.encode(text))
        width = max(len(s) for s in seqs)
        context = torch.tensor([s + [0] * (width - len(s)) for s in seqs])
        batch = {"context": context}
        input_cont, input_resp, resp_label = tod.mask_for_response_selection(batch, tokenizer, targs, {"x": [1]}, {})
        input_cont, labels = tod.mask_tokens(input_cont, tokenizer, targs)
        # train()'s loss lines (my_tod_pretraining.py 420-448), as written there.
        outputs = model.bert(input_cont, attention_mask=input_cont > 0)
        sequence_output = outputs[0]
        hid_cont = sequence_output[:, 0, :]
        prediction_scores = model.cls(sequence_output)
        loss = xeloss(prediction_scores.view(-1, model.config.vocab_size), labels.view(-1))
        loss_mlm = loss.item()
        outputs = model.bert(input_resp, attention_mask=input_resp > 0)
        hid_resp = outputs[0][:, 0, :]
        scores = torch.matmul(hid_cont, hid_resp.transpose(1, 0))
        loss_rs = xeloss(scores, resp_label)
        loss += loss_rs
        tensors[f"batch{bi}.context"] = input_cont
        tensors[f"batch{bi}.labels"] = labels
        tensors[f"batch{bi}.response"] = input_resp
        batches.append({"dialogues": rows, "mlm": loss_mlm, "rcl": loss_rs.item(), "loss": loss.item()})
    meta = {"source": "jasonwu0731/ToD-BERT 0c36e31, transformers v4.29.2, torch " + torch.__version__,
            "vocab_size": vocab, "batches": batches}
    d = os.path.join(out, "rcl", "testdata", "oracle")
    os.makedirs(d, exist_ok=True)
    write_safetensors(os.path.join(d, "batches.safetensors"), tensors)
    with open(os.path.join(d, "batches.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print("rcl batches", batches)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dse", required=True, help="amazon-research/dse at f645d74")
    p.add_argument("--todbert", required=True, help="jasonwu0731/ToD-BERT at 0c36e31")
    p.add_argument("--model", required=True, help="the tiny BERT folder (../shared/fixtures/tiny-bert)")
    p.add_argument("--out", required=True, help="the objectives folder of the repository")
    a = p.parse_args()
    shim()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dse_oracle(a, a.out)
    rcl_oracle(a, a.out)


if __name__ == "__main__":
    main()
