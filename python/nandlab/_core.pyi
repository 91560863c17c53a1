"""Type stubs of the Rust extension module ``nandlab._core`` (crates/nandlab-py)."""

from collections.abc import Callable

__version__: str

class TraceError(ValueError): ...
class ConfigError(ValueError): ...
class SimError(RuntimeError): ...

def run(
    config_toml: str,
    config_path: str | None,
    overrides: list[str],
    scheme: str | None,
    trace_path: str,
    trace_options_json: str,
    progress: Callable[[int, int], None] | None = None,
    setup_progress: Callable[[str, int, int], None] | None = None,
    flow_traces: list[str] | None = None,
) -> str: ...
def cache_stream(
    config_toml: str,
    config_path: str | None,
    overrides: list[str],
    trace_path: str,
    trace_options_json: str,
    output: str,
) -> str: ...
def parse_only(path: str, trace_options_json: str) -> str: ...
def trace_stats(path: str, trace_options_json: str, page_size_bytes: int) -> str: ...
def trace_convert(input: str, trace_options_json: str, output: str) -> int: ...
def trace_generate(params_json: str, output: str) -> int: ...
def rber_table(request_json: str) -> str: ...
def ecc_table(request_json: str) -> str: ...
def check_config(
    config_toml: str,
    config_path: str | None,
    overrides: list[str],
    scheme: str | None = None,
) -> str: ...
def check_configs(
    config_toml: str,
    config_path: str | None,
    runs: list[tuple[list[str], str | None]],
) -> list[tuple[bool, str]]: ...
def scheme_names() -> list[str]: ...
def config_keys() -> list[str]: ...
def scheme_param_keys(config_toml: str, scheme: str) -> list[str]: ...

class DpaCodec:
    """DPA-PPU page codec (Guo §2.4)."""

    def __init__(
        self,
        chunk_bytes: int = 8,
        order: int = 16,
        polynomials: int | None = None,
        backend: str = "auto",
    ) -> None: ...
    @property
    def chunk_bytes(self) -> int: ...
    @property
    def polynomials(self) -> list[int]: ...
    @property
    def backend(self) -> str: ...
    def encode(
        self, page: bytes, choice: str | int | None = None
    ) -> tuple[bytes, bool, bytes, int, int]: ...
    def decode(self, stored: bytes, correlated: bool, tags: bytes) -> bytes: ...

def dpa_analyze(request_json: str, progress: Callable[[int, int], None] | None = None) -> str: ...
def dpa_summarize(files_json: str) -> str: ...
def dpa_lifetime(request_json: str) -> str: ...
def dpa_polynomials(order: int = 16, count: int | None = None) -> list[int]: ...

# object device (Guo ch. 4; `nandlab osd`)
def osd_run(
    config_toml: str,
    config_path: str | None,
    overrides: list[str],
    trace_path: str,
    max_commands: int = 0,
) -> str: ...
def fs_trace_stats(path: str) -> str: ...
def osd_bench(
    config_toml: str,
    config_path: str | None,
    overrides: list[str],
    pattern: str,
    request_bytes: int,
    total_bytes: int,
    file_bytes: int = 0,
) -> str: ...
def osd_crash_test(
    config_toml: str,
    config_path: str | None,
    overrides: list[str],
    trace_path: str | None,
    max_commands: int,
    pattern: str,
    request_bytes: int,
    total_bytes: int,
    cuts: int,
    seed: int,
    variant: str,
    cut_only: str | None = None,
) -> str: ...
