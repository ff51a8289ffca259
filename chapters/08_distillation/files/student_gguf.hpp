// Chapter 08, part 4 (the files), file 2: writing a student as a GGUF file (version 3, F32
// tensors) that lib's loader — and so every chapter binary with -m — reads like the teacher.
//
// The metadata is the teacher's (tokenizer, chat template, names) with the shape keys rewritten
// from the student's config (llama.block_count above all) and general.file_type = 0 (all F32).
// The tensors follow llama.cpp's names: token_embd, output_norm, [output,] blk.N.attn_norm,
// attn_q/k/v, attn_output, ffn_norm, ffn_gate/up/down; a [out, in] matrix is written with ggml's
// dims {in, out}.
#pragma once

#include <map>
#include <string>

#include "gguf/gguf_file.hpp"
#include "student.hpp"

namespace infer::train {

// teacher_metadata: the teacher file's metadata() to copy, or empty (a test's random model:
// then only the general.architecture and llama.* keys are written).
void write_student_gguf(const std::string& path, const Student<float>& student,
                        const std::map<std::string, gguf::Value>& teacher_metadata = {});

}  // namespace infer::train
