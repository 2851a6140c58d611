"""Random legal schedules never change a kernel's output.

CI runs a few examples per kernel; ``LOOPCOST_FUZZ_EXAMPLES=100 pytest
tests/test_fuzz_schedules.py`` runs the full campaign.
"""

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopcost.ir.state import ProgramState
from loopcost.kernels import KERNELS
from loopcost.transforms.schedule import Schedule
from loopcost.transforms.space import KINDS, random_step

from .programs import measure_one

EXAMPLES = int(os.environ.get("LOOPCOST_FUZZ_EXAMPLES", "3"))


def draw_schedule(program, kinds, seed):
    """Apply one random legal step of each kind in ``kinds`` (skipping kinds with none)."""
    rng = random.Random(seed)
    state, steps = ProgramState.initial(program), []
    for kind in kinds:
        step = random_step(state, rng, kinds=(kind,))
        if step is not None:
            steps.append(step.step)
            state = step.state
    return Schedule(tuple(steps)), state


def check(program, schedule, state):
    assert Schedule.parse(str(schedule)) == schedule
    assert Schedule.parse(str(schedule)).apply(program) == state, "the notation must reproduce the state"
    m = measure_one(state)
    assert m.verified, f"{program.name}: schedule {schedule} changed the output: {m.error}"


@pytest.mark.parametrize("name", sorted(KERNELS))
@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 5,
          suppress_health_check=[HealthCheck.too_slow])
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4), seed=st.integers(0, 2**31))
def test_random_legal_schedules_preserve_output(name, kinds, seed):
    program = KERNELS[name].program("small")
    schedule, state = draw_schedule(program, kinds, seed)
    check(program, schedule, state)


@pytest.mark.parametrize("kind", KINDS)
def test_every_transformation_kind_is_exercised(kind):
    """Each kind, applied after a random prefix, on three kernels where it is legal."""
    names = sorted(KERNELS)
    rng = random.Random(KINDS.index(kind))
    rng.shuffle(names)
    done = 0
    for name in names:
        program = KERNELS[name].program("small")
        schedule, state = draw_schedule(program, [rng.choice(KINDS), kind], rng.randrange(2**31))
        if not schedule.steps or schedule.steps[-1].kind != kind:
            continue
        check(program, schedule, state)
        done += 1
        if done == 3:
            break
    assert done == 3, f"{kind} was legal on only {done} kernels"
