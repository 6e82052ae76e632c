"""Run `python -m llama_cpp.server` with the model loaded as tipbench loads it.

tipbench loads GGUF models without llama.cpp's extra CPU buffer types, whose AMX path
segfaults on this machine's CPU; the server gets the same treatment so it can run here.
"""

import runpy

from tipbench.backends._llamacpp import plain_cpu_buffers

with plain_cpu_buffers():
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
