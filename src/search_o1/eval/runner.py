"""An evaluation run: every item through the engine, scored and saved as it finishes.

Rerunning the same command resumes: ids already in results.jsonl are skipped. Items
whose trace ended in a backend error are not saved (a failure is not an answer), so a
rerun retries them; many in a row abort the run early instead of burning the dataset.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from search_o1.config import Settings
from search_o1.engine import Engine
from search_o1.errors import BackendError, ConfigError
from search_o1.eval import runfiles
from search_o1.eval.datasets import Dataset
from search_o1.eval.report import render_summary
from search_o1.eval.rows import Item
from search_o1.eval.sandbox import Limits
from search_o1.eval.scoring import aggregate, groups_of, score_item
from search_o1.scheduler import Job, run_all
from search_o1.types import FinishReason, Trace

MAX_CONSECUTIVE_ERRORS = 20


@dataclass
class RunOptions:
    method: str
    out: Path
    concurrency: int = 16
    schedule: str = "async"
    backoff: Path | None = None
    limits: Limits = field(default_factory=Limits)
    progress: bool = True
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


class _Tally:
    """Counts for the progress bar and the early abort on repeated backend errors."""

    def __init__(self, primary: str) -> None:
        self.primary = primary
        self.total = 0.0
        self.scored = 0
        self.failed = 0
        self.consecutive_errors = 0
        self.last_error = ""

    def label(self) -> str:
        value = 100 * self.total / self.scored if self.scored else 0.0
        failed = f" · failed {self.failed}" if self.failed else ""
        return f"{self.primary} {value:.1f}{failed}"


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
        "documents": trace.document_counts(),
        "tokens": {
            "prompt": usage.prompt_tokens,
            "completion": usage.completion_tokens,
            "reader_prompt": reader.prompt_tokens,
            "reader_completion": reader.completion_tokens,
        },
        "latency_s": round(trace.latency_s, 4),
        "groups": groups_of(item, task),
        "trace": trace.to_dict(),
    }


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
            "sandbox": vars(opts.limits) if dataset.task == "code" else None,
            "argv": opts.argv,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
        "settings": runfiles.scrub(settings) if settings else {},
        "engine": dataclasses.asdict(engine.options),
        "environment": runfiles.environment(),
    }
    runfiles.write_json(opts.out / runfiles.CONFIG, config)


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
    (out / runfiles.SUMMARY).write_text(render_summary(metrics), encoding="utf-8")
    return metrics


async def _on_result(
    job: Job,
    trace: Trace,
    *,
    items: Mapping[str, Item],
    dataset: Dataset,
    opts: RunOptions,
    sink: IO[str],
    tally: _Tally,
) -> None:
    if trace.finish_reason is FinishReason.ERROR:
        tally.failed += 1
        tally.consecutive_errors += 1
        tally.last_error = trace.error or "backend error"
        if tally.consecutive_errors >= MAX_CONSECUTIVE_ERRORS:
            raise BackendError(
                "eval",
                f"{tally.consecutive_errors} items failed in a row; last: {tally.last_error}",
            )
        return
    tally.consecutive_errors = 0
    item = items[job.id]
    scores, detail = await score_item(
        item,
        trace.answer,
        dataset.task,
        integer_answers=dataset.integer_answers,
        limits=opts.limits,
    )
    record = _record(item, trace, scores, dataset.task)
    if detail is not None:
        record["code_result"] = detail
    runfiles.append_record(sink, record)
    tally.scored += 1
    tally.total += scores.get(dataset.metric, 0.0)


def _unwrap(error: BaseException) -> BaseException:
    """The first real error inside the scheduler's exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _progress(opts: RunOptions) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[metric]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not opts.progress,
    )


def _inflight(settings: Settings | None) -> dict[str, int]:
    if settings is None:
        return {}
    return {"llm_limit": settings.max_llm_inflight, "search_limit": settings.max_search_inflight}


async def run_eval(engine: Engine, dataset: Dataset, opts: RunOptions) -> RunOutcome:
    """Run (or resume) `dataset` with `opts.method` into `opts.out`; returns the metrics."""
    opts.out.mkdir(parents=True, exist_ok=True)
    runfiles.check_same_run(opts.out, _identity(dataset, opts.method))
    fallback = _load_fallback(opts.backoff, dataset)
    _write_config(dataset, engine, opts)
    done = runfiles.read_records(opts.out)
    todo = [item for item in dataset.items if item.id not in done]
    items = {item.id: item for item in todo}
    tally = _Tally(dataset.metric)
    jobs = [Job(i.id, i.question, dataset.task, opts.method) for i in todo]
    with runfiles.open_results(opts.out) as sink, _progress(opts) as progress:
        bar = progress.add_task(dataset.name, total=len(dataset.items), metric=tally.label())
        progress.update(bar, completed=len(dataset.items) - len(todo))

        async def on_result(job: Job, trace: Trace) -> None:
            await _on_result(
                job, trace, items=items, dataset=dataset, opts=opts, sink=sink, tally=tally
            )
            progress.update(bar, advance=1, metric=tally.label())

        try:
            await run_all(
                engine, jobs, concurrency=opts.concurrency, on_result=on_result,
                schedule=opts.schedule, **_inflight(opts.settings),
            )  # fmt: skip
        except BaseException as e:
            # Whatever stopped the run, the metrics of what finished are still written.
            with contextlib.suppress(Exception):
                finalize(opts.out, dataset, opts.method, fallback)
            raise _unwrap(e) from None
    metrics = finalize(opts.out, dataset, opts.method, fallback)
    return RunOutcome(
        metrics, ran=tally.scored, resumed=len(dataset.items) - len(todo), failed=tally.failed
    )
