"""The restart cost model: a rescale's downtime as fixed + per MB of state, fitted from measured restarts."""
import pytest

from controllers.restart_cost import NotEnoughRestarts, RestartCost, fit_restart_cost


def test_the_fit_recovers_fixed_and_per_megabyte_parts_and_the_plain_restarts_median():
    rescales = [(mb, 2.0 + 0.01 * mb + noise) for mb in (1, 10, 100) for noise in (-0.05, 0.05)]
    cost = fit_restart_cost(rescales, [1.4, 1.5, 3.0], source="test")
    assert cost.rescale_fixed_s == pytest.approx(2.0) and cost.rescale_per_mb_s == pytest.approx(0.01)
    assert cost.plain_restart_s == 1.5 and cost.source == "test"
    assert cost.rescale_s(50) == pytest.approx(2.5) and cost.rescale_s(-3) == pytest.approx(2.0)


def test_one_state_size_gives_no_per_megabyte_part_and_a_falling_fit_is_not_believed():
    assert fit_restart_cost([(10, 2.0), (10, 3.0)], [1.0]) == RestartCost(2.5, 0.0, 1.0)
    falling = fit_restart_cost([(1, 3.0), (100, 2.0)], [1.0])  # noise, not state making restarts cheaper
    assert falling.rescale_per_mb_s == 0.0 and falling.rescale_fixed_s == pytest.approx(2.5)


def test_without_rescales_or_plain_restarts_there_is_no_fit():
    with pytest.raises(NotEnoughRestarts, match="0 rescale"):
        fit_restart_cost([], [1.0])
    with pytest.raises(NotEnoughRestarts, match="0 plain"):
        fit_restart_cost([(1, 2.0)], [])
