"""The fusion model against HW-Flow-Fusion's closed forms: Eq. 4, Eq. 8, Eq. 9, Eq. 10-13, Eq. 6."""

from __future__ import annotations

import pytest
from nets import vgg16_e_prefix

from dnnmap.fusion.buffers import fusion_buffer
from dnnmap.fusion.geometry import FusionError
from dnnmap.fusion.group import build_group
from dnnmap.fusion.tiling import plan_tiles
from dnnmap.fusion.volume import offchip_volume
from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.zoo import get


def _chain(size: int, kernels: tuple[int, ...], strides: tuple[int, ...], pad: bool = True):  # noqa: ANN202
    b = NetworkBuilder("chain", (1, 2, size, size))
    for i, (k, s) in enumerate(zip(kernels, strides)):
        b.conv(f"c{i}", 2, k, s, k // 2 if pad else 0)
    net = b.build()
    return net, build_group(net, [layer.name for layer in net.layers])


def _eq10(n_out: int, t_out: int, n_in: int, k: int, s: int, p: int) -> list[int]:
    """Eq. 10 with digest G7's reading of X_3 (the padded full width), as widths in tile order."""
    t_in = (t_out - 1) * s + k
    reps = -(-n_out // t_out) - 2
    x1, x2 = t_in - p, t_in - (k - s)
    if reps < 0:
        return [n_in]
    x3 = (n_in + 2 * p) - 2 * p - x1 - x2 * reps
    return [x1] + [x2] * reps + [x3]


@pytest.mark.parametrize("size,tile", [(56, 8), (56, 7), (20, 3), (17, 5), (9, 4), (9, 9)])
def test_multi_tile_widths_follow_eq10(size: int, tile: int) -> None:
    """Two 3x3 s1 p1 layers: the intermediate map's multi-tiles are Eq. 10's X_1, X_2 x X_reps, X_3."""
    _, group = _chain(size, (3, 3), (1, 1))
    plan = plan_tiles(group, tile, tile)
    assert list(plan.cols.widths("c0")) == _eq10(size, tile, size, 3, 1, 1)


def test_digest_g7_example() -> None:
    _, group = _chain(56, (3, 3), (1, 1))
    assert plan_tiles(group, 8, 8).cols.multi_tiles("c0") == ((9, 1), (8, 5), (7, 1))


@pytest.mark.parametrize("kernels,strides", [((3, 3), (1, 1)), ((3, 3, 3), (1, 2, 1)), ((5, 2, 3), (1, 2, 1))])
def test_eq4_first_tile_without_padding(kernels: tuple[int, ...], strides: tuple[int, ...]) -> None:
    """Unpadded chains: the first tile of each map is Eq. 4's T_i = (T_o - 1) * S + N_k, bottom-up."""
    _, group = _chain(40, kernels, strides, pad=False)
    plan = plan_tiles(group, 3, 3)
    t_out = 3
    for g in reversed(group.layers):
        t_in = (t_out - 1) * g.windows[1].stride + g.windows[1].kernel
        assert plan.cols.new(g.inputs[0], 0) == (0, t_in)
        t_out = t_in


def test_eq13_multi_tiling_computes_every_pixel_once() -> None:
    net = vgg16_e_prefix(size=23)
    group = build_group(net, [layer.name for layer in net.layers])
    plan = plan_tiles(group, 2, 3)
    for g in group.layers:
        assert plan.multi_tile_macs(g) == net.layer(g.name).op.macs
        assert 1 <= len(plan.multi_tile_sets[g.name]) <= 9 or g.name == group.bottom.name


@pytest.mark.parametrize("tile", [2, 4, 7])
def test_reuse_buffer_is_eq8_for_a_chain(tile: int) -> None:
    """Eq. 8: (N_ix - T_ix) * (N_ky - S_y) * N_if, with T_ix the largest window read."""
    _, group = _chain(30, (3, 3, 3), (1, 1, 1))
    buf = fusion_buffer(plan_tiles(group, tile, tile))
    for m in buf.maps:
        consumer = group.consumers(m.map)[0]
        k, s = consumer.windows[0].kernel, consumer.windows[0].stride
        assert m.reuse_rows == k - s
        assert m.reuse_words == (m.width - m.window[1]) * (k - s) * m.channels
        assert m.alwani_overhead_words == (m.window[0] - (k - s)) * (k - s) * m.channels  # Eq. 9


def test_eq6_counts_each_input_and_output_once_and_bottom_weights_per_tile() -> None:
    net = get("vgg16_e")
    group = build_group(net, ["block3_conv1", "block3_conv2"])  # CONV5+CONV6 (G5)
    whole = offchip_volume(plan_tiles(group, 8, 8))
    sliced = offchip_volume(plan_tiles(group, 8, 8, 64))
    c5, c6 = group.layers
    assert whole.input_words == 128 * 56 * 56 and whole.output_words == 256 * 56 * 56
    assert whole.weight_words == c5.weight_words + c6.weight_words
    assert sliced.weight_words == c5.weight_words + c6.weight_words * 49


def test_group_outputs_of_different_sizes_are_rejected() -> None:
    net = get("resnet18")
    with pytest.raises(FusionError, match="differ in size"):
        build_group(net, ["layer1.1.add", "layer2.0.conv1"])  # 56x56 add output read by layer2.0.downsample


def test_unfusable_layer_is_named() -> None:
    with pytest.raises(FusionError, match="fc"):
        build_group(get("vgg16_e"), ["block5_pool", "fc1"])
