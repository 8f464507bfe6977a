"""Deprecated import path for ``sglang.benchmark.serving``, as in sglang 0.5.17: the module the
runner's commands name (`python -m sglang.bench_serving`) re-exports the library and, run as
__main__, calls its `cli_main()`, which builds the parser and reads sys.argv."""

import warnings

from sglang.benchmark.serving import *  # noqa: F401,F403
from sglang.benchmark.serving import cli_main

warnings.warn("`sglang.bench_serving` is deprecated", FutureWarning, stacklevel=1)

if __name__ == "__main__":
    cli_main()
