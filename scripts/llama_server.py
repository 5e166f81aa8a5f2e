"""llama.cpp's OpenAI-compatible server (llama-cpp-python), started so that it survives CPUs with
AMX tiles: on such a host ggml repacks Q4_K weights for AMX and the first chat request crashed
the server (a general protection fault in ggml_backend_amx_mul_mat). Loading the model with its
extra buffer types off avoids it; llama-cpp-python's server has no option for that, so this sets
it in the model parameters it starts from, then runs the server with the arguments given.

    python scripts/llama_server.py --model FILE --model_alias NAME --port 8011 ...   (the server's own)

Other CPUs keep the extra buffer types (their repacked weights are faster). Run by
scripts/local-model.sh with the llama-cpp-python venv's Python.
"""

from __future__ import annotations

import sys
from pathlib import Path


def has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    try:
        return "amx_tile" in cpuinfo.read_text().split()
    except OSError:
        return False


def main() -> None:
    import llama_cpp.llama_cpp as native

    if has_amx():
        default = native.llama_model_default_params

        def without_extra_buffers():
            params = default()
            params.use_extra_bufts = False
            return params

        native.llama_model_default_params = without_extra_buffers
        print("llama_server: AMX tiles found: extra buffer types off (use_extra_bufts=False)", file=sys.stderr)
    from llama_cpp.server.__main__ import main as serve

    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    serve()


if __name__ == "__main__":
    main()
