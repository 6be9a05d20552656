"""An evaluation run: every item through the engine, scored and saved as it finishes.

Rerunning the same command resumes: ids already in results.jsonl are skipped. Items
whose trace ended in a backend error are not saved (a failure is not an answer), so a
rerun retries them; many in a row abort the run early instead of burning the dataset.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from search_o1.config import Settings, result_settings
from search_o1.engine import Engine, get_method
from search_o1.engine.options import EngineOptions
from search_o1.errors import BackendError, ConfigError
from search_o1.eval import runfiles
from search_o1.eval.datasets import Dataset
from search_o1.eval.report import render_summary
from search_o1.eval.rows import Item
from search_o1.eval.sandbox import Limits, check_isolation, isolation_summary
from search_o1.eval.scoring import aggregate, groups_of, score_item
from search_o1.prompts.templates import PromptSet
from search_o1.scheduler import Job, run_all
from search_o1.sources import answer_sources
from search_o1.types import FinishReason, Trace, to_jsonable

MAX_CONSECUTIVE_ERRORS = 20


@dataclass
class RunOptions:
    method: str
    out: Path
    concurrency: int = 16
    schedule: str = "async"
    backoff: Path | None = None
    limits: Limits = field(default_factory=Limits)
    # Called once before the first item and after each one; the CLI draws its bar here.
    on_progress: Callable[[Progress], None] | None = None
    # What the run was configured with (recorded in config.json; its in-flight limits
    # bound the scheduler). None: a library caller that built the Engine itself.
    settings: Settings | None = None
    argv: list[str] | None = None


@dataclass
class RunOutcome:
    metrics: dict[str, Any]
    ran: int
    resumed: int
    failed: int
    failures: Counter[str] = field(default_factory=Counter)  # cause -> items (not saved)


@dataclass(frozen=True)
class Progress:
    """Where a run stands: items done of all (resumed ones included), and the score so far.

    `score` is the mean primary metric over every saved item, resumed ones included (as
    metrics.json counts them); None before any item is scored.
    """

    run: str  # "dataset · method"
    done: int
    total: int
    metric: str
    score: float | None
    failed: int

    def label(self) -> str:
        value = "–" if self.score is None else f"{100 * self.score:.1f}"
        failed = f" · failed {self.failed}" if self.failed else ""
        return f"{self.metric} {value}{failed}"


class _Tally:
    """Counts for progress reports and the early abort on repeated backend errors."""

    def __init__(self, primary: str, resumed: Mapping[str, Mapping[str, Any]]) -> None:
        self.primary = primary
        self.total = sum(float(r.get("metrics", {}).get(primary, 0.0)) for r in resumed.values())
        self.scored = len(resumed)  # saved items, resumed ones included
        self.ran = 0  # items scored by this invocation
        self.failed = 0
        self.failures: Counter[str] = Counter()
        self.consecutive_errors = 0
        self.last_error = ""

    def progress(self, run: str, total: int) -> Progress:
        score = self.total / self.scored if self.scored else None
        done = self.scored + self.failed
        return Progress(run, done, total, self.primary, score, self.failed)


def _record(item: Item, trace: Trace, scores: Mapping[str, float], task: str) -> dict[str, Any]:
    usage, reader = trace.usage, trace.reader_usage
    return {
        "id": item.id,
        "question": item.question,
        "gold": list(item.gold),
        "prediction": trace.answer,
        "metrics": dict(scores),
        "finish_reason": trace.finish_reason.value if trace.finish_reason else None,
        "searches": [s.query for s in trace.searches],
        "n_searches": sum(1 for s in trace.searches if s.outcome == "searched"),
        "sources": [to_jsonable(s) for s in answer_sources(trace)],
        "documents": trace.document_counts(),
        "tokens": {
            "prompt": usage.prompt_tokens,
            "completion": usage.completion_tokens,
            "reader_prompt": reader.prompt_tokens,
            "reader_completion": reader.completion_tokens,
        },
        "latency_s": round(trace.latency_s, 4),
        "groups": groups_of(item, task),
        "replaced": replaced_chars(item, trace),
        "trace": _trace_without_question(trace, item.question),
    }


def replaced_chars(item: Item, trace: Trace) -> dict[str, int]:
    """Lone surrogates made U+FFFD where text came in: in the dataset row, the search
    replies and the model's replies (the trace holds each hit's and call's own count)."""
    search = sum(h.replaced for r in trace.searches for h in r.hits)
    return {
        "dataset": int(item.meta.get("replaced", 0)),
        "search": search,
        "model": sum(step.completion.replaced for step in trace.steps),
    }


def model_output(trace: Trace) -> str:
    """The whole output the paper's scores read: the chain (inserted results included),
    or the model's turns joined where there is no chain text (tools mode)."""
    return trace.output or "".join(step.text for step in trace.steps)


QUESTION_SLOT = "{question}"


def _trace_without_question(trace: Trace, question: str) -> dict[str, Any]:
    """The trace as saved: the question is the record's own field, kept once.

    The trace's copy is dropped, and in the prompt's messages the question's text is
    replaced by `prompt.question_slot` ("{question}"): `content.replace(slot, question)`
    gives the message back exactly. A message already holding that text is left whole.
    """
    data = trace.to_dict()
    data.pop("question", None)
    prompt = data.get("prompt")
    if isinstance(prompt, dict) and question:
        for message in prompt.get("messages") or []:
            content = message.get("content")
            if isinstance(content, str) and QUESTION_SLOT not in content:
                message["content"] = content.replace(question, QUESTION_SLOT)
        prompt["question_slot"] = QUESTION_SLOT
    return data


def _identity(dataset: Dataset, method: str) -> dict[str, Any]:
    return {"dataset": dataset.name, "task": dataset.task, "method": method}


def _write_config(dataset: Dataset, engine: Engine, opts: RunOptions) -> None:
    settings = opts.settings.model_dump(mode="json") if opts.settings else None
    config = {
        "run": {
            **_identity(dataset, opts.method),
            "dataset_file": dataset.path.name,
            "items": len(dataset.items),
            "skipped_rows": [vars(s) for s in dataset.skipped],
            "concurrency": opts.concurrency,
            "schedule": opts.schedule,
            "backoff": str(opts.backoff) if opts.backoff else None,
            "sandbox": _sandbox_config(opts.limits) if dataset.task == "code" else None,
            "argv": runfiles.scrub_argv(opts.argv) if opts.argv is not None else None,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
        "settings": runfiles.scrub(settings) if settings else {},
        "engine": _engine_config(engine.options),
        "environment": runfiles.environment(),
    }
    runfiles.write_json(opts.out / runfiles.CONFIG, config)


def _engine_config(options: EngineOptions) -> dict[str, Any]:
    """The engine's options as JSON; a prompt set as its folder and slot files (its
    compiled templates are not data, and copying them failed every `--prompts` run)."""
    prompts = options.prompts
    config = dataclasses.asdict(dataclasses.replace(options, prompts=PromptSet()))
    config["prompts"] = {"source": prompts.source, "templates": sorted(prompts.templates)}
    return config


def _sandbox_config(limits: Limits) -> dict[str, Any]:
    """The code sandbox's limits and which isolation its programs get on this machine."""
    return {**vars(limits), "isolation": isolation_summary()}


def _load_fallback(backoff: Path | None, dataset: Dataset) -> dict[str, dict[str, Any]] | None:
    if backoff is None:
        return None
    config = runfiles.read_json(backoff / runfiles.CONFIG).get("run", {})
    if config.get("dataset") != dataset.name:
        raise ConfigError(
            f"--backoff {backoff} is a run of {config.get('dataset')!r}, not {dataset.name!r}"
        )
    return runfiles.read_records(backoff)


def finalize(
    out: Path, dataset: Dataset, method: str, fallback: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, Any]:
    """Recompute metrics.json and summary.md from results.jsonl (each id counted once)."""
    wanted = {item.id for item in dataset.items}
    records = [r for i, r in runfiles.read_records(out).items() if i in wanted]
    metrics = {
        **_identity(dataset, method),
        "primary": dataset.metric,
        "items": len(dataset.items),
        "missing": len(wanted) - len(records),
        "skipped_rows": len(dataset.skipped),
        **aggregate(records, dataset.task, fallback=fallback),
    }
    runfiles.write_json(out / runfiles.METRICS, metrics)
    runfiles.write_text(out / runfiles.SUMMARY, render_summary(metrics))
    return metrics


async def _on_result(
    job: Job,
    trace: Trace,
    *,
    items: Mapping[str, Item],
    dataset: Dataset,
    opts: RunOptions,
    sink: runfiles.ResultsFile,
    tally: _Tally,
) -> None:
    if trace.finish_reason is FinishReason.ERROR:
        tally.failed += 1
        tally.consecutive_errors += 1
        tally.last_error = trace.error or "backend error"
        tally.failures[tally.last_error[:200]] += 1
        if tally.consecutive_errors >= MAX_CONSECUTIVE_ERRORS:
            raise BackendError(
                "eval",
                f"{tally.consecutive_errors} items failed in a row; last: {tally.last_error}",
            )
        return
    tally.consecutive_errors = 0
    item = items[job.id]
    scores, fields = await score_item(
        item,
        trace.answer,
        dataset.task,
        output=model_output(trace),
        integer_answers=dataset.integer_answers,
        limits=opts.limits,
    )
    record = _record(item, trace, scores, dataset.task) | fields
    runfiles.append_record(sink, record)
    tally.scored += 1
    tally.ran += 1
    tally.total += scores.get(dataset.metric, 0.0)


def _unwrap(error: BaseException) -> BaseException:
    """The first real error inside the scheduler's exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _inflight(settings: Settings | None) -> dict[str, int]:
    if settings is None:
        return {}
    return {"llm_limit": settings.max_llm_inflight, "search_limit": settings.max_search_inflight}


async def preflight(engine: Engine, dataset: Dataset, method: str = "search-o1") -> None:
    """Ask the model server, the search backend and a reader of its own once before any
    item runs.

    A dead server then fails the run in seconds with its cause (a BackendError), instead
    of every item failing one by one after its retries. A dead reader fails no item (each
    search is recorded as failed and the chain goes on), so without this check a run
    finished with every search failed and scores that looked like the model's own.
    """
    await engine.llm.context_length()
    if engine.search is not None and dataset.items:
        await engine.search.search(dataset.items[0].question, k=1)
    reads = get_method(method).answer == "reader" and engine.options.reader.enabled
    if reads and engine.search is not None and engine.reader.llm is not engine.llm:
        try:
            await engine.reader.llm.context_length()
        except BackendError as e:
            raise BackendError("reader", f"the Reason-in-Documents model: {e}") from None


def check_resume(out: Path, dataset: Dataset, opts: RunOptions) -> None:
    """Refuse a folder that is not a run, a run made with other result-changing settings,
    one another eval is writing, or model code where no isolation holds (unless the
    limits accept that)."""
    runfiles.check_unlocked(out)
    _check_contents(out, dataset, opts)


def _check_contents(out: Path, dataset: Dataset, opts: RunOptions) -> None:
    if dataset.task == "code":
        check_isolation(opts.limits)
    runfiles.check_run_dir(out)
    runfiles.check_same_run(out, _identity(dataset, opts.method))
    if opts.settings is not None:
        runfiles.check_same_settings(out, result_settings(opts.settings))


async def run_eval(engine: Engine, dataset: Dataset, opts: RunOptions) -> RunOutcome:
    """Run (or resume) `dataset` with `opts.method` into `opts.out`; returns the metrics.

    The run directory is held for the whole run: a second eval into it is refused.
    """
    check_resume(opts.out, dataset, opts)
    try:
        opts.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise runfiles.write_failed(opts.out, e) from None
    with runfiles.lock_run_dir(opts.out):
        return await _run_locked(engine, dataset, opts)


async def _run_locked(engine: Engine, dataset: Dataset, opts: RunOptions) -> RunOutcome:
    _check_contents(opts.out, dataset, opts)  # again, now that no other eval can write it
    fallback = _load_fallback(opts.backoff, dataset)
    _write_config(dataset, engine, opts)
    wanted = {item.id for item in dataset.items}
    done = {i: r for i, r in runfiles.read_records(opts.out).items() if i in wanted}
    todo = [item for item in dataset.items if item.id not in done]
    items = {item.id: item for item in todo}
    tally = _Tally(dataset.metric, done)
    jobs = [Job(i.id, i.question, dataset.task, opts.method) for i in todo]
    label, total = f"{dataset.name} · {opts.method}", len(dataset.items)
    report = opts.on_progress or (lambda _: None)
    report(tally.progress(label, total))
    with runfiles.open_results(opts.out) as sink:

        async def on_result(job: Job, trace: Trace) -> None:
            await _on_result(
                job, trace, items=items, dataset=dataset, opts=opts, sink=sink, tally=tally
            )
            report(tally.progress(label, total))

        try:
            await run_all(
                engine,
                jobs,
                concurrency=opts.concurrency,
                on_result=on_result,
                schedule=opts.schedule,
                **_inflight(opts.settings),
            )
        except BaseException as e:
            # Whatever stopped the run, the metrics of what finished are still written.
            with contextlib.suppress(Exception):
                finalize(opts.out, dataset, opts.method, fallback)
            raise _unwrap(e) from None
    metrics = finalize(opts.out, dataset, opts.method, fallback)
    return RunOutcome(
        metrics,
        ran=tally.ran,
        resumed=len(dataset.items) - len(todo),
        failed=tally.failed,
        failures=tally.failures,
    )
