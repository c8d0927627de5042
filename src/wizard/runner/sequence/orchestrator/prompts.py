"""What the orchestrator says to its planner (the seed run) and to each task's agent.

A task's first prompt starts with one line naming its id and label, so logs, transcripts and
the scripted gateway's routing tell tasks apart; then its inputs, the handoffs of the tasks
it depends on, and the program's instructions for its type.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from wizard.programs.types import Orchestration, ProgramConfig
from wizard.runner.sequence.orchestrator.queue import QueuedTask, TaskQueue
from wizard.skills.install import SkillInstall, skill_file

SEED_LINE = "# Plan the setup"
SEED_NUDGE = (
    "The queue is still empty. Seed it now with enqueue_task calls for the task graph you planned."
)
TASK_NUDGE = (
    "You have not called complete_task yet. Finish your task now: if the work is done, call "
    'complete_task with your handoff; if it cannot be done, call it with status "failed" or '
    '"not needed" and say why.'
)


def task_line(task: QueuedTask) -> str:
    """The first line of a task's prompt."""
    return f"# Task {task.id}: {task.label}"


def _skill(install: SkillInstall) -> str:
    return (
        f"The skill for this setup is installed at {install.path}/: read "
        f"{skill_file(install)}. Where it says to plan with TaskCreate, the queue stands in "
        "for that task list."
    )


def seed_prompt(
    program: ProgramConfig, install: SkillInstall, done: Sequence[QueuedTask] = ()
) -> str:
    """The seed run's prompt: plan the work as a task graph, change nothing (around the
    steps `done` by an earlier run of the plan, which was interrupted while it planned)."""
    plan: Orchestration = program.orchestration
    types = "\n".join(f"- `{t.id}`: {t.description}" for t in plan.task_types)
    parts = [
        SEED_LINE,
        f"You are the planner of the setup '{program.label}'. {_skill(install)} Check its "
        "stop conditions first; if one holds, write its stop line exactly as the skill gives "
        "it and plan nothing.",
        "Otherwise plan the work and seed the queue with enqueue_task, one call per task. Each "
        "task is run by its own agent, which sees only its task's prompt, inputs and the "
        "handoffs of the tasks it depends on. Independent tasks run in parallel; give a task "
        "`depends_on` only when it needs another's result. You are not a task yourself: do "
        "not edit the project.",
        f"Task types:\n{types}",
        plan.seed_instructions,
    ]
    if done:
        steps = "\n".join(
            f"- `{t.id}` ({t.type}): {t.label}: {t.summary or t.status}" for t in done
        )
        parts.append(
            "An earlier run of this setup was interrupted while it planned. These steps are "
            f"already done; do not enqueue them again, and name them in `depends_on` where a "
            f"task needs their result:\n{steps}"
        )
    return "\n\n".join(parts)


def task_prompt(
    program: ProgramConfig, install: SkillInstall, queue: TaskQueue, task: QueuedTask
) -> str:
    """A task's first prompt: its line, inputs, the handoffs it depends on, its instructions."""
    kind = program.orchestration.task_type(task.type)
    parts = [
        task_line(task),
        f"You carry out one task of the setup '{program.label}'. {_skill(install)}",
    ]
    if task.inputs:
        parts.append("Inputs:\n" + json.dumps(dict(task.inputs), indent=2, sort_keys=True))
    handoffs = [queue.get(dep) for dep in task.depends_on]
    if handoffs:
        parts.append(
            "Handoffs from the tasks you depend on:\n"
            + "\n".join(
                f"- {dep.id} ({dep.status}): {dep.handoff or dep.summary}" for dep in handoffs
            )
        )
    parts.append(kind.instructions)
    parts.append(
        "When your task is finished, call complete_task once, as your last call: status "
        "'done', 'failed' (say why) or 'not needed', with a summary and a handoff for the "
        "tasks after yours."
    )
    return "\n\n".join(parts)
