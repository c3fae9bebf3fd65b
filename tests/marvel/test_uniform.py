"""Marvel Fig. 6/7 on the Table 3 layers: layouts matter per layer, one uniform layout costs little in total."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.search.marvel.db_model import DbSettings
from dnnmap.search.marvel.offchip import offchip_search
from dnnmap.studies.marvel.table3 import TABLE3, table3_op
from dnnmap.studies.marvel.uniform import PAPER_UNIFORM, uniform_layout_study
from dnnmap.workload.ops import eltwise

ARCH = load_arch("marvel_platform1")


@pytest.fixture(scope="module")
def study():
    return uniform_layout_study([offchip_search(table3_op(r), ARCH, DbSettings.table3()) for r in TABLE3])


def test_each_layers_best_is_its_least_layout_cost(study):
    assert np.allclose(study.best, study.cost.min(axis=1))
    assert (study.total_ratio >= 1 - 1e-12).all()


def test_papers_uniform_layout_is_the_best_uniform_layout(study):
    # Marvel Fig. 7: filters K, inputs X, outputs K innermost; X and Y tie (square tiles)
    assert study.ratio_of(PAPER_UNIFORM)[0] == pytest.approx(study.total_ratio.min())
    worst = study.total_ratio.max()
    assert worst > 3 * study.ratio_of(PAPER_UNIFORM)[0]  # the choice matters in total, not only per layer


def test_a_bad_layout_costs_tens_of_times_more_on_the_fc_layer(study):
    # Marvel Fig. 6: "close to 100x" on L7
    l7 = study.layers.index(table3_op(TABLE3[6]).name)
    assert study.cost[l7].max() / study.best[l7] > 50


def test_layers_with_other_layout_names_are_refused():
    with pytest.raises(ValueError, match="other layouts"):
        uniform_layout_study([offchip_search(table3_op(TABLE3[0]), ARCH, DbSettings.table3()),
                              offchip_search(eltwise("a", 8, 7), ARCH, DbSettings.table3())])
