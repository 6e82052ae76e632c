"""Run `python -m llama_cpp.server` with the model loaded as tipbench loads it.

    python -m tipbench_dev.llama_server --model MODEL.gguf [llama_cpp.server's options]

tipbench loads GGUF models without llama.cpp's extra CPU buffer types, whose AMX path
segfaults on this machine's CPU; the server gets the same treatment so it can run here.
"""

import runpy

from tipbench.backends._llamacpp import plain_cpu_buffers

if __name__ == "__main__":
    with plain_cpu_buffers():
        runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
