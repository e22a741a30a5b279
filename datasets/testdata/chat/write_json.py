#!/usr/bin/env python3
"""Writes the JSONL and JSON fixtures of datasets' chat-record readers (files_chat_json_test.go) with
Python's json module, a writer independent of convrep. Run once from this folder; the files are committed:

    python3 write_json.py

The texts hold non-ASCII characters and a line separator (U+2028, escaped by json.dumps' ensure_ascii),
and openai.jsonl and sharegpt.json start with a byte-order mark, as some Windows tools write them."""
import gzip
import json

BOM = "\ufeff"

# OpenAI fine-tuning / HuggingFace chat template records: messages with role and content, no id.
openai = [
    {"messages": [
        {"role": "system", "content": "You are a support agent for a parcel service."},
        {"role": "user", "content": "Where is my parcel?\u2028It was due on Monday."},
        {"role": "assistant", "content": "Let me check: what is the tracking number?"},
        {"role": "user", "content": "It is 4711, addressed to Zoë in Göteborg."},
        {"role": "assistant", "content": "It arrives tomorrow. 🚚"},
    ]},
    {"messages": [
        {"role": "system", "content": "You are a support agent for a parcel service."},
        {"role": "user", "content": [
            {"type": "text", "text": "Is this box damaged?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/box.jpg"}},
        ]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "inspect", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"damaged\": true}"},
        {"role": "assistant", "content": "Yes, the corner is crushed; I have ordered a replacement."},
        {"role": "user", "content": "   "},
        {"role": "user", "content": "Danke schön!"},
    ]},
    {"messages": [
        {"role": "developer", "content": "Answer in one sentence."},
        {"role": "user", "content": "日本への配送はできますか？"},
        {"role": "assistant", "content": "はい、できます。"},
    ]},
]
with open("openai.jsonl", "w", encoding="utf-8") as f:
    f.write(BOM)
    for rec in openai:
        f.write(json.dumps(rec) + "\n")  # ensure_ascii: every non-ASCII character as \u escapes

# ShareGPT: one JSON array of records with an id and conversations (from/value), pretty-printed.
sharegpt = [
    {"id": "sg-1", "conversations": [
        {"from": "system", "value": "Be helpful."},
        {"from": "human", "value": "Can I change my delivery address?"},
        {"from": "gpt", "value": "Yes, until the parcel leaves the depot."},
        {"from": "human", "value": "And after that?"},
        {"from": "gpt", "value": "Then the driver can leave it with a neighbour."},
    ]},
    {"id": "sg-2", "conversations": [
        {"from": "human", "value": "¿Hacen envíos a Canarias?"},
        {"from": "gpt", "value": "Sí, en cinco días hábiles."},
    ]},
]
text = BOM + json.dumps(sharegpt, ensure_ascii=False, indent=2) + "\n"
with open("sharegpt.json", "w", encoding="utf-8") as f:
    f.write(text)
with open("sharegpt.json.gz", "wb") as f:
    with gzip.GzipFile(filename="sharegpt.json", mode="wb", fileobj=f, mtime=0) as gz:
        gz.write(text.encode("utf-8"))

# DailyDialog as HuggingFace datasets' to_json writes it: the turns a list of strings, speakers alternating.
dailydialog = [
    {"dialog": ["Say, Jim, how about going for a few beers after dinner?",
                "You know that is tempting but is really not good for our fitness.",
                "What do you mean?"],
     "act": [3, 4, 2], "emotion": [0, 0, 0]},
    {"dialog": ["Can you do push-ups?", "", "Of course I can."], "act": [2, 1, 1], "emotion": [0, 0, 0]},
]
with open("dailydialog.jsonl", "w", encoding="utf-8") as f:
    for rec in dailydialog:
        f.write(json.dumps(rec, ensure_ascii=False) + "\n")

# MultiWOZ 2.2 as the hub's to_json writes it: turns a struct of parallel lists, the speaker a ClassLabel
# (0 user, 1 system).
multiwoz = [
    {"dialogue_id": "PMUL4398.json", "services": ["restaurant", "hotel"], "turns": {
        "turn_id": ["0", "1", "2"], "speaker": [0, 1, 0],
        "utterance": ["i need a place to dine in the center thats expensive",
                      "I have several options for you; do you prefer African, Asian, or British food?",
                      "Any sort of food would be fine, as long as it is a bit expensive."]}},
    {"dialogue_id": "SNG0129.json", "services": ["taxi"], "turns": {
        "turn_id": ["0", "1"], "speaker": [0, 1],
        "utterance": ["I need a taxi to the station.", "What time would you like to leave?"]}},
]
with open("multiwoz.jsonl", "w", encoding="utf-8") as f:
    for rec in multiwoz:
        f.write(json.dumps(rec) + "\n")
