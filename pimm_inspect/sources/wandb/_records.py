"""The records of a W&B transaction log as the reader takes them: run identity, telemetry, config, summary, metric
definitions, console output, exit (everything but the history rows, which ``_bulk`` decodes in bulk)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model import Finding, SourceFile
from ._files import ConsoleCollector
from ._history import History, MetricDefinition, loads

_STDOUT = 1  # OutputRecord/OutputRawRecord.OutputType: STDERR = 0, STDOUT = 1


def _path_key(item: Any) -> tuple[str, ...]:
    """The key path of a History/Config/Summary item (``key`` or ``nested_key``)."""
    return (item.key,) if item.key else tuple(item.nested_key)


def _set_path(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set ``target[a][b]... = value``, replacing non-dict intermediates."""
    for part in path[:-1]:
        child = target.get(part)
        if not isinstance(child, dict):
            child = target[part] = {}
        target = child
    target[path[-1]] = value


def _nested(values: Mapping[tuple[str, ...], str]) -> dict[str, Any]:
    """Build a nested dict from path -> value_json."""
    out: dict[str, Any] = {}
    for path, text in values.items():
        if path:
            _set_path(out, path, loads(text))
    return out



class _LogState:
    """What the transaction log contributed (mutable while reading)."""

    def __init__(self, console_source: str) -> None:
        self.history = History()
        self.metrics: list[MetricDefinition] = []
        self.config: dict[tuple[str, ...], str] = {}
        self.summary: dict[tuple[str, ...], str] = {}
        self.run: dict[str, Any] = {}
        self.console = ConsoleCollector(console_source)
        self.has_console = False
        self.explicit_step = False
        self.offline = False
        self.exit_code: int | None = None
        self.runtime_s: int | None = None
        self.preempted = False
        self.unknown = 0
        self.undecodable = 0
        self.findings: list[Finding] = []
        self.source: SourceFile | None = None
        self.end_offset = 0
        """Where the next read of a grown log starts (just past the last whole record)."""
        self.resumable = False
        """True when the read ended cleanly enough to be continued from ``end_offset``."""


def _apply_items(target: dict[tuple[str, ...], str], record: Any) -> None:
    """Apply a Config/Summary record's updates and removals to path -> value_json."""
    for item in record.update:
        target[_path_key(item)] = item.value_json
    for item in record.remove:
        target.pop(_path_key(item), None)


def _take_run(state: _LogState, run: Any) -> None:
    """Identity from a RunRecord (first non-empty value of each field wins)."""
    fields = {"run_id": run.run_id, "entity": run.entity, "project": run.project,
              "display_name": run.display_name, "group": run.run_group, "job_type": run.job_type,
              "notes": run.notes, "tags": tuple(run.tags) or None,
              "start_time_s": (run.start_time.seconds + run.start_time.nanos / 1e9) or None}
    for name, value in fields.items():
        if value and not state.run.get(name):
            state.run[name] = value
    if (run.resumed or run.starting_step > 0) and not state.run.get("resumed"):
        state.run["resumed"] = (f"run record: resumed, starting_step {run.starting_step}" if run.resumed else
                                f"run record: starting_step {run.starting_step}")
    state.run["resume_requested"] = state.run.get("resume_requested", False) or run.resume
    branch = run.branch_point if run.HasField("branch_point") else None
    if branch is not None and branch.run and not state.run.get("resume_from"):
        # wandb.init(resume_from="<id>?_step=N") / fork_from: where the server rewinds (or forks) the history.
        metric = branch.metric or "_step"
        value = int(branch.value) if float(branch.value).is_integer() else branch.value
        state.run["resume_from"] = f"{'fork_from' if run.forked else 'resume_from'} {branch.run}?{metric}={value}"
    _apply_items(state.config, run.config)
    _take_telemetry(state, run.telemetry)


def _take_telemetry(state: _LogState, telemetry: Any) -> None:
    """Feature flags: explicit ``step=`` logging and offline mode."""
    state.explicit_step = state.explicit_step or telemetry.feature.set_step_log
    state.offline = state.offline or telemetry.feature.offline
    if telemetry.feature.resumed and not state.run.get("resumed"):
        state.run["resumed"] = "telemetry feature resumed"  # wandb.init saw the server continue the run


def _take_record(state: _LogState, rec: Any) -> None:
    """Dispatch one decoded Record."""
    kind = rec.WhichOneof("record_type")
    if kind == "history":
        state.history.add(rec.history)
    elif kind == "summary":
        _apply_items(state.summary, rec.summary)
    elif kind == "config":
        _apply_items(state.config, rec.config)
    elif kind == "run":
        _take_run(state, rec.run)
    elif kind == "metric":
        m = rec.metric
        state.metrics.append(MetricDefinition(m.name or None, m.glob_name or None, m.step_metric or None,
                                              m.options.hidden, m.options.step_sync))
    elif kind in ("output", "output_raw"):
        out = getattr(rec, kind)
        ts = (out.timestamp.seconds + out.timestamp.nanos / 1e9) or None
        text = out.line if kind == "output_raw" or out.line.endswith("\n") else out.line + "\n"
        state.console.feed("stdout" if out.output_type == _STDOUT else "stderr", text, ts)
        state.has_console = True
    elif kind == "telemetry":
        _take_telemetry(state, rec.telemetry)
    elif kind == "exit":
        state.exit_code, state.runtime_s = rec.exit.exit_code, rec.exit.runtime
    elif kind == "preempting":
        state.preempted = True
    elif kind is None:
        state.unknown += 1  # a record type newer than the installed wandb's protos
