"""``counts_checker``'s straight-line test passes exactly what ``check_counts`` passes, so the refusal it defers to
``check_counts`` is the same one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner import Layout, Workload
from anchorgpu.planner.workload_checks import check_counts, counts_checker, validate_workload

_VALUES = st.one_of(st.none(), st.integers(-3, 5), st.booleans(), st.floats(-2.0, 4.0), st.just("2"))


@given(tp=_VALUES, pp=_VALUES, dp=_VALUES)
def test_checker_passes_what_check_counts_passes(tp: object, pp: object, dp: object) -> None:
    lay = Layout(tp=tp, pp=pp, dp=dp)  # type: ignore[arg-type]
    try:
        check_counts(("tp", "pp", "dp"), (tp, pp, dp))  # type: ignore[arg-type]
        refused = False
    except InvalidWorkload:
        refused = True
    assert counts_checker("tp", "pp", "dp")(lay) is not refused


@pytest.mark.parametrize("bad", [{"concurrency": 0}, {"micro_batch": True}, {"context_tokens": 8192.0},
                                 {"max_num_seqs": -1}])
def test_a_workload_count_still_refused_by_name(bad: dict[str, object]) -> None:
    # named by the CLI's flag (stop 56 qa15: it was "concurrency=0"); the API's words make it the field
    field = next(iter(bad))
    flag = {"context_tokens": "--context"}.get(field, "--" + field.replace("_", "-"))
    with pytest.raises(InvalidWorkload, match=f"^{flag} "):
        validate_workload(Workload(**bad))  # type: ignore[arg-type]
