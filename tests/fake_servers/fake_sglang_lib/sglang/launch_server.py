"""`python -m sglang.launch_server` of the stand-in: fake_vllm.py's server behind SGLang's flags."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/fake_servers, for fake_vllm
import fake_vllm  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="sglang.launch_server")
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", required=True)
    parser.add_argument("--served-model-name", default=None)
    args, _unknown = parser.parse_known_args()
    served = ["--served-model-name", args.served_model_name] if args.served_model_name else []
    sys.exit(fake_vllm.serve([args.model_path, "--host", args.host, "--port", args.port, *served]))
