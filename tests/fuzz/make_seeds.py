#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into tests/fuzz/corpus/ (small, deterministic files).

    python3 tests/fuzz/make_seeds.py

corpus/gguf/       GGUF files written byte by byte from the specification (not by our reader): a
                   miniature Llama model shaped like SmolLM2's file (same metadata keys, a byte-level
                   vocabulary with merges and special tokens, a chat template, tensors), a file with
                   one value of every metadata type, one tensor of every storage type, a version-2
                   file, and truncations of the model at interesting offsets.
corpus/tokenizer/  the first byte picks the test (0 encode with special tokens, 1 encode as plain
                   text, 2 decode ids, 3 chat template), the rest is its data.
corpus/record/     run records in the schema of lib/app/run_record.hpp: generation and tables
                   records, one of the reference CPU backend, the older form without a model hash,
                   a prompt that is not UTF-8.

The fuzzers add their own discoveries to a scratch directory, never here; a finding that deserves a
seed is copied in by hand and named for what it shows.
"""
import json
import random
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
rng = random.Random(18)  # issue 18; the corpus must not change from one run of this script to the next

# ---------------------------------------------------------------------------------------------
# GGUF, little-endian: magic, version u32, tensor count u64, metadata count u64, metadata,
# tensor infos, padding to the alignment, tensor data.

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "B",
          U64: "Q", I64: "q", F64: "d"}


def gguf_string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf_value(vtype, value):
    if vtype == STRING:
        return gguf_string(value)
    if vtype == ARRAY:
        etype, items = value
        return struct.pack("<IQ", etype, len(items)) + b"".join(gguf_value(etype, v) for v in items)
    return struct.pack("<" + SCALAR[vtype], value)


# ggml storage types: id -> (elements per block, bytes per block)
TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20),
         "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q8_1": (9, 32, 36),
         "Q2_K": (10, 256, 84), "Q3_K": (11, 256, 110), "Q4_K": (12, 256, 144),
         "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "Q8_K": (15, 256, 292),
         "IQ4_NL": (20, 32, 18), "BF16": (30, 1, 2)}


def fp16_bytes(values):
    return b"".join(struct.pack("<e", v) for v in values)


def tensor_data(type_name, n_elements):
    """Plausible bytes: real scales (small fp16 numbers) where a block starts with one."""
    _, block, size = TYPES[type_name]
    if type_name == "F32":
        return b"".join(struct.pack("<f", rng.uniform(-1, 1)) for _ in range(n_elements))
    if type_name == "F16":
        return fp16_bytes(rng.uniform(-1, 1) for _ in range(n_elements))
    if type_name == "BF16":
        return b"".join(struct.pack("<f", rng.uniform(-1, 1))[2:] for _ in range(n_elements))
    out = b""
    for _ in range(n_elements // block):
        raw = bytes(rng.randrange(256) for _ in range(size))
        if block == 32:  # Q4_0 ... Q8_1 start with an fp16 scale (and some with an fp16 min)
            raw = fp16_bytes([rng.uniform(0.001, 0.05), rng.uniform(-0.1, 0.1)]) + raw[4:]
        out += raw
    return out


def gguf_file(metadata, tensors, version=3, alignment=32):
    """metadata: [(key, type, value)]; tensors: [(name, dims, type name)] (dims[0] fastest)."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata))
    head += b"".join(gguf_string(k) + struct.pack("<I", t) + gguf_value(t, v) for k, t, v in metadata)
    infos, blobs, offset = b"", [], 0
    for name, dims, type_name in tensors:
        type_id, _, _ = TYPES[type_name]
        n = 1
        for d in dims:
            n *= d
        data = tensor_data(type_name, n)
        infos += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", type_id, offset)
        blobs.append(data)
        offset += len(data)
        offset += -offset % alignment
    out = head + infos
    out += b"\0" * (-len(out) % alignment)
    for data in blobs:
        out += data + b"\0" * (-len(data) % alignment)
    return out


def byte_level_alphabet():
    """GPT-2's map from bytes to printable characters (the byte-level BPE alphabet)."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(0x100 + extra)
            extra += 1
    return chars


def mini_llama(d_model=8, heads=2, kv_heads=1, embd_type="F16"):
    """A Llama file with SmolLM2's keys and a working byte-level tokenizer, in a few kilobytes."""
    alphabet = byte_level_alphabet()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    sp = alphabet[ord(" ")]
    merges = [f"{sp} t", f"{sp} a", "i n", "h e", f"{sp}t he", "e r", "o n", f"{sp} s", "1 2"]
    tokens = specials + [alphabet[b] for b in range(256)]
    for m in merges:
        left, right = m.split(" ")
        tokens.append(left + right)
    types = [3] * len(specials) + [1] * (len(tokens) - len(specials))
    vocab = len(tokens)
    metadata = [
        ("general.architecture", STRING, "llama"),
        ("general.type", STRING, "model"),
        ("general.name", STRING, "Mini Llama for fuzzing"),
        ("general.languages", ARRAY, (STRING, ["en"])),
        ("llama.block_count", U32, 1),
        ("llama.context_length", U32, 64),
        ("llama.embedding_length", U32, d_model),
        ("llama.feed_forward_length", U32, 16),
        ("llama.attention.head_count", U32, heads),
        ("llama.attention.head_count_kv", U32, kv_heads),
        ("llama.rope.freq_base", F32, 100000.0),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("general.file_type", U32, 3),
        ("llama.vocab_size", U32, vocab),
        ("llama.rope.dimension_count", U32, d_model // heads),
        ("tokenizer.ggml.add_bos_token", BOOL, 0),
        ("tokenizer.ggml.model", STRING, "gpt2"),
        ("tokenizer.ggml.pre", STRING, "smollm"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (I32, types)),
        ("tokenizer.ggml.merges", ARRAY, (STRING, merges)),
        ("tokenizer.ggml.bos_token_id", U32, 1),
        ("tokenizer.ggml.eos_token_id", U32, 2),
        ("tokenizer.chat_template", STRING, "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
                                            "{{ message['content'] }}<|im_end|>\n{% endfor %}"),
        ("general.quantization_version", U32, 2),
    ]
    tensors = [("token_embd.weight", [d_model, vocab], embd_type), ("output_norm.weight", [d_model], "F32")]
    return gguf_file(metadata, tensors)


def every_value_type():
    scalars = [("u8", U8, 200), ("i8", I8, -100), ("u16", U16, 60000), ("i16", I16, -30000),
               ("u32", U32, 4_000_000_000), ("i32", I32, -2_000_000_000), ("f32", F32, 1.5),
               ("bool", BOOL, 1), ("u64", U64, 2**63 + 5), ("i64", I64, -2**62), ("f64", F64, -0.25),
               ("string", STRING, "héllo"), ("empty string", STRING, "")]
    metadata = [(f"test.{k}", t, v) for k, t, v in scalars]
    metadata += [(f"test.array.{k}", ARRAY, (t, [v, v])) for k, t, v in scalars]
    metadata += [("test.array.empty", ARRAY, (U8, [])),
                 ("test.array.nested", ARRAY, (ARRAY, [(I32, [1, 2]), (STRING, ["a"])])),
                 ("general.alignment", U32, 64)]
    return gguf_file(metadata, [], alignment=64)


def every_tensor_type():
    tensors = []
    for name, (_, block, _) in TYPES.items():
        tensors.append((f"t.{name}", [block, 1] if block > 1 else [4, 2], name))
    tensors.append(("t.four_dims", [2, 1, 1, 2], "F32"))
    return gguf_file([("general.architecture", STRING, "llama")], tensors)


def write(directory, name, data):
    path = CORPUS / directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def gguf_seeds():
    model = mini_llama()
    write("gguf", "mini_llama.gguf", model)
    write("gguf", "mini_llama_q8_0.gguf", mini_llama(d_model=32, heads=4, kv_heads=2, embd_type="Q8_0"))
    write("gguf", "every_value_type.gguf", every_value_type())
    write("gguf", "every_tensor_type.gguf", every_tensor_type())
    write("gguf", "version2.gguf", gguf_file([("general.name", STRING, "v2")], [("x", [4], "F32")], version=2))
    write("gguf", "header_only.gguf", gguf_file([], []))
    # Truncations: inside the header, inside a metadata string, inside the vocabulary, inside the
    # tensor infos, inside the data.
    for cut in (6, 30, 200, len(model) // 2, len(model) - 700, len(model) - 1):
        write("gguf", f"mini_llama_cut_{cut}.gguf", model[:cut])


def tokenizer_seeds():
    encode_texts = {
        "english": "The capital of France is Paris. It's 2024, and we'll see 3.14159 apples!",
        "chat": "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
        "unicode": "Ünïcödé — 日本語のテキスト, Ελληνικά, emoji 🙂👍🏽, combining e\u0301, NBSP\u00a0here",
        "whitespace": "a  b\t\tc\n\n\nd   \r\n  ",
        "digits": "0123456789 ١٢٣ ⅷ ²³ 1,000,000.00",
        "specials_glued": "<|endoftext|><|im_start|><|im_end|><|im_start|<|im_end|>x<|endoftext|",
        "contractions": "I'm you're they've she'd it'll don't 'S 'T",
    }
    for i, (name, text) in enumerate(encode_texts.items()):
        write("tokenizer", f"encode_{name}", bytes([i % 2]) + text.encode())
    # A long text (about 4 KB), so that the fuzzer's inputs may grow that long (its default limit
    # on input size is the largest seed).
    paragraph = ("In 1969, the Apollo 11 mission landed on the Moon; Neil Armstrong's words were: \"That's one "
                 "small step for [a] man, one giant leap for mankind.\"  Prices rose 3.5% — from $12,345.67 to "
                 "$12,777.77 (≈ +432.10).\n\tCode: for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n"
                 "Übergrößenträger, naïve café, 東京タワー, 서울, Москва, القاهرة, 🚀✨.\n\n")
    write("tokenizer", "encode_long", bytes([0]) + (paragraph * 11).encode()[:4000])
    write("tokenizer", "encode_invalid_utf8", b"\x00caf\xc3\xa9 \xff\xfe \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82")
    write("tokenizer", "encode_overlong", b"\x01\xc0\x80\xe0\x80\xaf\xf0\x80\x80\xaf end")
    # Decode: the data is read by FuzzedDataProvider, so any bytes make some ids.
    write("tokenizer", "decode_ids", bytes([2]) + bytes(rng.randrange(256) for _ in range(200)))
    write("tokenizer", "decode_small", bytes([2, 1, 0, 0, 1, 0, 2, 0xff, 0xfe, 0x80]))
    # Regression seed of a finding (README.md): bytes SmolLM2's vocabulary has no token for.
    write("tokenizer", "finding_tokenless_bytes", b"\x00Hello\x14 world \x04\x06\x13\x16\x1d \xf1\x80\x80\x80\xf2\xbf\xbf\xbf!")
    write("tokenizer", "chat_messages", bytes([3]) + b"You are a pirate.\\\x01Hello there\\\x00Ahoy\\\x01\x01\x02")


def record(binary, kind, prompt, prompt_ids, steps, text, **extra):
    r = {"binary": binary, "kind": kind,
         "model": {"file": "SmolLM2-135M-Instruct.Q4_1.gguf", "path": "data/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                   "sha256": "e" * 64},
         "settings": {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": 42, "chat": False, "n_predict": len(steps),
                      "device": "cpu"},
         "prompt": prompt, "prompt_ids": prompt_ids, "steps": steps, "text": text, "figures": {}}
    r.update(extra)
    return json.dumps(r, indent=1, ensure_ascii=False)


def record_seeds():
    steps = [{"token": 7042, "text": " Paris", "top": [[7042, 17.25], [253, 12.5]], "seconds": 0.0121},
             {"token": 30, "text": ".", "top": [[30, 15.0], [28, 13.75]], "seconds": 0.0117}]
    write("record", "generation.json", record("ch01_naive_loop", "generation", "The capital of France is",
                                              [504, 3575, 282, 4649, 314], steps, " Paris."))
    write("record", "tables.json", record("ch04_batching", "tables", "", [], [], "",
                                          figures={"machine": {"threads": 2, "read_bandwidth_bytes_per_s": 1.2e10},
                                                   "sweep": [{"batch": 1, "ms": 20.5}, {"batch": 8, "ms": 31.0}]}))
    write("record", "reference_backend.json", record("ch02_kv_cache", "generation", "The capital of France is",
                                                      [504, 3575, 282, 4649, 314], steps, " Paris.",
                                                      simd="AVX2", backend="reference"))
    write("record", "invalid_utf8_prompt.json",
          record("ch01_naive_loop", "generation", "café \ufffd\ufffd", [1, 2, 3], steps[:1], " x",
                 prompt_bytes=list(b"caf\xc3\xa9 \xff\xfe"), text_bytes=list(b" x")))
    # A longer generation (about 4 KB, the fuzzer's default limit on input size is the largest seed).
    long_steps = [{"token": 100 + i, "text": f" w{i}", "top": [[100 + i, 20.0 - i * 0.1], [7, 3.5], [8, -1.25]],
                   "seconds": 0.01 + i * 1e-4} for i in range(24)]
    write("record", "generation_long.json",
          record("ch02_kv_cache", "generation", "Once upon a time", [8279, 2402, 253, 655], long_steps,
                 "".join(s["text"] for s in long_steps),
                 settings={"temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 7, "chat": True,
                           "n_predict": 24, "device": "cpu"}))
    old = {"binary": "ch02_kv_cache", "model": "models/old.gguf", "prompt": "Hi", "prompt_ids": [1, 2],
           "steps": [{"token": 5, "top": [[5, 1.0]]}], "text": "!"}
    write("record", "old_format.json", json.dumps(old))
    write("record", "minimal.json", '{"prompt_ids":[],"steps":[]}')
    # Regression seeds of the findings (README.md): numbers that do not fit their fields, and
    # nesting deeper than any record (refused at 64 levels).
    write("record", "finding_number_out_of_range.json",
          '{"prompt_ids":[1,4294967297],"steps":[{"token":7.0421e100,"top":[[5,1e39]],"seconds":0.5}],'
          '"settings":{"seed":-1,"top_k":2.5},"prompt_bytes":[104,300]}')
    write("record", "finding_deep_nesting.json",
          '{"prompt_ids":[1],"steps":[],"figures":' + "[" * 100 + "]" * 100 + "}")


if __name__ == "__main__":
    gguf_seeds()
    tokenizer_seeds()
    record_seeds()
    total = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    print(f"{CORPUS}: {sum(1 for p in CORPUS.rglob('*') if p.is_file())} files, {total} bytes")
