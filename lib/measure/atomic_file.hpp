// Writing an output file so that no reader, and no crash, ever sees half of it: the contents go
// to a temporary file beside the target, which is then renamed over it. rename() within one
// directory is atomic on POSIX file systems, so the path names either the old file or the whole
// new one. Run records (--json), tables (--csv) and plots (--plot) are written this way.
#pragma once

#include <string>
#include <string_view>

namespace infer {

// Replaces the file at `path` with `contents`. Throws std::runtime_error naming the file when it
// cannot; the old file, if any, is then left as it was and no temporary file remains.
void write_file_atomically(const std::string& path, std::string_view contents);

// Adds `text` at the end of the file at `path` (creating it), atomically as above: the old
// contents and the text are written to a temporary file that replaces the old one.
void append_file_atomically(const std::string& path, std::string_view text);

}  // namespace infer
