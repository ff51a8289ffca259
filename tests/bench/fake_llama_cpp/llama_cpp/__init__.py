"""A stand-in for llama-cpp-python's ctypes API, for test_compare_crash.py only: just the calls
compare_llama_cpp.py's child process makes (through llama_cpp_decode.py's Context and Timing),
doing no work, and crashing with a real SIGSEGV where FAKE_LLAMA_CRASH says:

  load         in llama_model_load_from_file
  decode       in every llama_decode
  decode-extra in llama_decode while the model was loaded with use_extra_bufts (the default), as
               a crash in llama.cpp's repacked weights would
  (unset)      never
"""
import os
import signal
import types

__version__ = "0.0-fake"
LLAMA_FTYPE_MOSTLY_Q8_0 = 7
LLAMA_FTYPE_MOSTLY_Q4_1 = 3
_state = {"extra": True}


def _crash_if(where):
    if os.environ.get("FAKE_LLAMA_CRASH") == where:
        os.kill(os.getpid(), signal.SIGSEGV)


def llama_log_callback(fn):
    return fn


def llama_log_set(callback, user_data):
    pass


def llama_backend_init():
    pass


def llama_print_system_info():
    return b"FAKE = 1"


def llama_model_default_params():
    return types.SimpleNamespace(n_gpu_layers=99, use_extra_bufts=True)


def llama_context_default_params():
    return types.SimpleNamespace(type_k=1, flash_attn_type=-1, n_ctx=0, n_batch=0, n_ubatch=0, n_threads=0,
                                 n_threads_batch=0, no_perf=False)


def llama_model_load_from_file(path, params):
    _crash_if("load")
    _state["extra"] = params.use_extra_bufts
    return object()


def llama_init_from_model(model, params):
    return object()


def llama_get_memory(ctx):
    return object()


class _Batch:
    def __init__(self, n):
        self.n_tokens = 0
        self.token, self.pos, self.n_seq_id, self.logits = [0] * n, [0] * n, [0] * n, [0] * n
        self.seq_id = [[0] for _ in range(n)]


def llama_batch_init(n, embd, seqs):
    return _Batch(n)


def llama_model_get_vocab(model):
    return object()


def llama_vocab_n_tokens(vocab):
    return 49152


def llama_model_size(model):
    return 1


def llama_model_n_params(model):
    return 1


def llama_decode(ctx, batch):
    _crash_if("decode")
    if _state["extra"]:
        _crash_if("decode-extra")
    return 0


def llama_synchronize(ctx):
    pass


def llama_memory_clear(memory, data):
    pass


def llama_memory_seq_rm(memory, seq, p0, p1):
    return True


def llama_batch_free(batch):
    pass


def llama_free(ctx):
    pass


def llama_model_free(model):
    pass
