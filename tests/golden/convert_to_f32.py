#!/usr/bin/env python3
"""Write a copy of a GGUF model with every tensor dequantized to F32.

Usage: python3 tests/golden/convert_to_f32.py IN.gguf OUT.gguf
       (OUT normally goes to data/cache/, which git ignores)

Why: the golden fixtures (tests/fixtures/golden_tokens.json) come from llama.cpp, an independent
implementation. When llama.cpp multiplies by Q4_1 / Q8_0 weights it first quantizes the activations
to 8 bits (Q8_1 / Q8_0) and uses integer dot products, which would blur a comparison with our fp32
forward pass. On F32 weights it computes in fp32. The F32 values written here are the same numbers our
loader produces, because we dequantize the same file to fp32 at load time (a Q4_1 value is d * q + m,
a Q8_0 value is d * q, with fp16 d and m; for SmolLM2-135M-Instruct.Q4_1.gguf every one of these is
exact in fp32, checked against a float64 recomputation, so no rounding or FMA choice can differ). The
only differences left between llama.cpp and us are fp32 summation order and libm, not quantization.

The dequantization is done by the `gguf` package (gguf.quants.dequantize), not by our C++ code.
All metadata key/values are copied unchanged except general.file_type, which is set to 0 (ALL_F32)
so the file describes its own contents; the GGUF.* pseudo-fields of the reader are skipped.
"""

import sys

import numpy as np
import gguf
from gguf import GGUFReader, GGUFValueType, GGUFWriter, GGMLQuantizationType


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: convert_to_f32.py IN.gguf OUT.gguf", file=sys.stderr)
        return 2
    src, dst = sys.argv[1], sys.argv[2]
    reader = GGUFReader(src, "r")

    arch_field = reader.fields.get(gguf.Keys.General.ARCHITECTURE)
    if arch_field is None:
        print(f"{src}: no general.architecture key", file=sys.stderr)
        return 1
    arch = arch_field.contents()
    writer = GGUFWriter(dst, arch)  # writes general.architecture itself

    for field in reader.fields.values():
        name = field.name
        if name.startswith("GGUF.") or name == gguf.Keys.General.ARCHITECTURE:
            continue
        if name == gguf.Keys.General.ALIGNMENT:
            writer.add_custom_alignment(int(field.contents()))  # sets data alignment and writes the key
            continue
        vtype = field.types[0]
        if name == gguf.Keys.General.FILE_TYPE:
            writer.add_key_value(name, int(gguf.LlamaFileType.ALL_F32), vtype)
            continue
        if vtype == GGUFValueType.ARRAY:
            if len(field.types) != 2:
                raise NotImplementedError(f"{name}: nested arrays are not supported")
            sub_type = field.types[-1]
            # add_key_value directly (not add_array / add_string): those silently drop empty values
            writer.add_key_value(name, field.contents(), vtype, sub_type=sub_type)
        else:
            writer.add_key_value(name, field.contents(), vtype)

    for t in reader.tensors:
        qtype = GGMLQuantizationType(t.tensor_type)
        data = gguf.quants.dequantize(t.data, qtype)
        data = np.ascontiguousarray(data, dtype=np.float32)
        # numpy shape is the reverse of the ggml ne[] order; check it against the header's dims
        expect = tuple(int(d) for d in reversed(t.shape.tolist()))
        if data.shape != expect:
            data = data.reshape(expect)
        writer.add_tensor(t.name, data)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {dst}: {len(reader.tensors)} tensors as F32")
    return 0


if __name__ == "__main__":
    sys.exit(main())
