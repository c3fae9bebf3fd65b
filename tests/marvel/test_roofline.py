"""The roofline bound: touched words against a brute-force set, and no priced mapping beats it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.search.mappers import random_search
from dnnmap.search.marvel.dataflows import BASELINES
from dnnmap.search.marvel.mapper import marvel_search
from dnnmap.search.marvel.onchip import MarvelOptions
from dnnmap.studies.marvel.roofline import roofline, touched_words
from dnnmap.workload.ops import conv2d, depthwise, eltwise, fully_connected


def _brute_touched(op, tensor):
    b = op.bounds
    seen = set()
    for point in itertools.product(*(range(n) for n in b.values())):
        env = dict(zip(b, point))
        seen.add(tuple(sum(c * env[d] for d, c in a.terms) for a in op.tensor(tensor).axes))
    return len(seen)


def test_touched_words_equal_a_brute_force_count():
    op = conv2d("s2", 2, 3, 9, 1, stride=2)  # a strided 1x1 window skips three quarters of its input hull
    for t in op.tensors:
        assert touched_words(op, t.name) == _brute_touched(op, t.name)
    assert touched_words(op, "I") < op.tensor("I").size(op.bounds)
    window = conv2d("w", 2, 2, 11, 3, stride=2)
    assert touched_words(window, "I") == _brute_touched(window, "I")


@pytest.mark.parametrize("arch_name", ["marvel_platform1", "marvel_platform2"])
def test_no_priced_mapping_beats_the_roofline(arch_name):
    arch = load_arch(arch_name)
    for op in (conv2d("c", 8, 16, 10, 3), fully_connected("fc", 256, 100), depthwise("dw", 32, 12, 3),
               eltwise("add", 16, 12)):
        roof = roofline(op, arch)
        found = [marvel_search(op, arch, "latency", MarvelOptions(parallel=df)).cost.cycles[0]
                 for df in (None, *BASELINES)]
        found += list(np.atleast_1d(random_search(op, arch, "latency", budget=200, seed=1).cost.cycles))
        assert min(found) >= roof.cycles * (1 - 1e-9), (op.name, roof)
        assert roof.bound in ("compute", "ingress", "egress", "dram")
