"""The behind-in-sampling banner's rule, without a sampler: which share of skipped samples is
shown, and for how long after the last window that skipped many."""

from __future__ import annotations

import pytest

from pytop.core.sticky import StickyShare, skipped_share


def test_behind_means_samples_skipped() -> None:
    assert skipped_share(ticks=1000, skipped=0, slot_seconds=1.0, judged_from=0.2) == 0.0  # every slot sampled
    assert skipped_share(ticks=600, skipped=400, slot_seconds=1.0, judged_from=0.2) == pytest.approx(0.4)
    assert skipped_share(ticks=10, skipped=90, slot_seconds=0.1, judged_from=0.2) == 0.0  # too short to tell
    assert skipped_share(ticks=0, skipped=0, slot_seconds=1.0, judged_from=0.2) == 0.0


def test_a_share_shows_from_its_threshold_and_is_held() -> None:
    sticky = StickyShare(shown_from=0.1, hold_seconds=3.0)
    assert sticky.update(0.05, now=0.0) == 0.0  # below the threshold: nothing to say
    assert sticky.update(0.4, now=1.0) == 0.4
    assert sticky.update(0.0, now=2.0) == 0.4  # a good window right after: still shown
    assert sticky.update(0.05, now=3.9) == 0.4  # held 3 s after the last bad window
    assert sticky.update(0.25, now=4.0) == 0.25  # a new bad window: its share, held again
    assert sticky.update(0.0, now=6.9) == 0.25
    assert sticky.update(0.0, now=7.0) == 0.0  # the hold is over
