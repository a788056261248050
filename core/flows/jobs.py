"""Background host calls: kitsoki's jobs, their `on_complete`, and the session inbox.

An `invoke:` with `background: true` is not dispatched in the turn (no `harness.dispatched`):
the orchestrator submits a job (internal/orchestrator/effects.go): the job id is bound to the
`bind:` key mapped to `job_id` (else `last_job_id`) and an info notification "Job submitted: <ns>"
goes to the inbox. The job runs the handler on the fake clock: a stub's `delay` parks it until
`advance_clock` passes that long; without a delay it finishes at once, which a flow can only
observe deterministically when the same turn advances the clock (kitsoki drains such jobs
before advancing), so otherwise the runner declines.

When a job ends (internal/orchestrator/oncomplete.go) the world gets `last_job_id`,
`last_job_status` (done or failed) and `last_job_result`; if the session is still in the job's
origin state its `on_complete` effects run there (their host calls dispatched, an `on_error`
redirect followed, else the first `target:` whose `when:` holds is entered), otherwise they are
dropped as stale. The world's `inbox` summary is refreshed, then the completion notification
("Job done: <ns>" success, "Job failed: <ns>" error) is posted. `expect_inbox` counts the unread
notifications and their severities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.flows.clock import parse_duration_ns
from core.flows.ids import job_id
from core.flows.machine import Event, HostCall, Unsupported
from core.kitsoki.duration import DurationError


@dataclass
class Job:
    id: str
    namespace: str
    origin: str
    args: dict[str, Any]
    on_complete: list[Any]
    due: int | None
    """Fake-clock time it finishes; None: at once (drained before the next advance)."""
    status: str = "running"
    error: str = ""


@dataclass
class Notification:
    severity: str
    title: str
    read: bool = False


@dataclass
class Jobs:
    jobs: list[Job] = field(default_factory=list)
    inbox: list[Notification] = field(default_factory=list)

    def pending(self) -> list[Job]:
        return [job for job in self.jobs if job.status == "running"]

    def immediate(self) -> list[Job]:
        return [job for job in self.pending() if job.due is None]

    def due(self, now: int) -> list[Job]:
        return sorted((job for job in self.pending() if job.due is not None and job.due <= now),
                      key=lambda job: job.due or 0)

    def unread(self) -> list[Notification]:
        return [note for note in self.inbox if not note.read]

    def summary(self) -> dict[str, Any]:
        unread = self.unread()
        return {"unread": len(unread), "needs_attention": sum(1 for n in unread if n.severity == "action_required")}


def submit(jobs: Jobs, registry: Any, call: HostCall, args: dict[str, Any], state: str, now: int,
           world: dict[str, Any]) -> list[Event]:
    """kitsoki's dispatchBackground: the job is queued, its id bound, the inbox told."""
    stub, _registered = registry.lookup(call.namespace)
    delay = getattr(stub, "delay", "") or ""
    if getattr(stub, "request_clarification", ""):
        raise Unsupported(f"host_handlers.{call.namespace}.request_clarification in a background job")
    try:
        delay_ns = parse_duration_ns(delay) if delay else 0
    except DurationError:
        delay_ns = 0
    job = Job(id=job_id(len(jobs.jobs) + 1), namespace=call.namespace, origin=state, args=args,
              on_complete=list(call.on_complete), due=now + delay_ns if delay_ns > 0 else None)
    jobs.jobs.append(job)
    key = next((k for k in sorted(call.bind) if call.bind[k] == "job_id"), "last_job_id")
    world[key] = job.id
    events = [Event("world.update", {"set": {key: job.id}})]
    if key != "last_job_id":
        world["last_job_id"] = job.id
        events.append(Event("world.update", {"set": {"last_job_id": job.id}}))
    events.append(Event("scheduler.submitted", {"namespace": call.namespace, "job_id": job.id, "state": state}))
    jobs.inbox.append(Notification("info", f"Job submitted: {call.namespace}"))
    return events


def run(job: Job, registry: Any) -> tuple[str, dict[str, Any] | None, str]:
    """The job's handler: (status, result data, error)."""
    from core.flows.hosts import InfraError

    try:
        data, error = registry.invoke(job.namespace, dict(job.args), background=True)
    except InfraError as exc:
        return "failed", None, str(exc)
    return ("failed" if error else "done"), data, error
