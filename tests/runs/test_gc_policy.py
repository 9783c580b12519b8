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
    # Objects of the app's own, still frozen after the run: not the permanent generation's count compared before
    # and after, which threads left by earlier tests in this process (an xdist worker's) lower by freeing objects.
    own = [[] for _ in range(10)]
    gc.freeze()  # as a pre-forking server does before it forks
    try:
        with run_collection():
            pass
        tracked = {id(o) for o in gc.get_objects()}  # the three generations: frozen objects are in none
        assert gc.get_freeze_count() > 0 and not any(id(o) in tracked for o in own)
    finally:
        gc.unfreeze()
