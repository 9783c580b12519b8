import gc

from ragcourt.runs.gc_policy import RUN_GEN0_THRESHOLD, run_collection


def test_a_run_freezes_what_exists_and_raises_the_first_threshold_until_the_last_run_leaves():
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    with run_collection():
        assert gc.get_threshold() == (max(RUN_GEN0_THRESHOLD, before[0]), *before[1:])
        assert gc.get_freeze_count() > frozen_before
        with run_collection():  # an overlapping run: the policy stays until both have left
            pass
        assert gc.get_threshold()[0] == max(RUN_GEN0_THRESHOLD, before[0])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_objects_the_app_froze_itself_stay_frozen_after_the_run() -> None:
    gc.freeze()  # as a pre-forking server does before it forks
    try:
        frozen_by_the_app = gc.get_freeze_count()
        with run_collection():
            pass
        assert gc.get_freeze_count() >= frozen_by_the_app
    finally:
        gc.unfreeze()
