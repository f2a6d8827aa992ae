"""torchvision's operators served from its wheel's _C.so (--load-library; a Python
extension, so the server loads libpython and libtorch_python.so for it) and called
remotely: the results equal the same call made locally, bit for bit (CPU)."""

from __future__ import annotations

import numpy as np
import torch
import torchvision  # noqa: F401  (registers torch.ops.torchvision locally)

from values import request, result


def boxes_and_scores(n: int, seed: int):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, (n, 2)).astype(np.float32)
    wh = rng.uniform(1, 30, (n, 2)).astype(np.float32)
    return np.concatenate([xy, xy + wh], axis=1), rng.uniform(0, 1, n).astype(np.float32)


def test_nms_equals_the_local_call(stub, stubs):
    pb, _ = stubs
    for seed, iou in ((0, 0.5), (1, 0.3), (2, 0.9)):
        boxes, scores = boxes_and_scores(500, seed)
        response = stub.Call(request(pb, "torchvision::nms", boxes, scores, iou), timeout=60)
        [keep] = [result(v) for v in response.outputs]
        local = torch.ops.torchvision.nms(torch.from_numpy(boxes), torch.from_numpy(scores), iou)
        assert keep.dtype == np.int64
        np.testing.assert_array_equal(keep, local.numpy())


def test_roi_align_equals_the_local_call(stub, stubs):
    pb, _ = stubs
    rng = np.random.default_rng(3)
    features = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
    rois = np.array([[0, 1.5, 2.0, 20.0, 18.5], [1, 0.0, 0.0, 31.0, 31.0],
                     [0, 10.0, 4.0, 12.0, 30.0]], dtype=np.float32)
    args = (1.0 / 2, 7, 7, 2, True)  # spatial_scale, pooled h/w, sampling_ratio, aligned
    response = stub.Call(request(pb, "torchvision::roi_align", features, rois, *args),
                         timeout=60)
    [pooled] = [result(v) for v in response.outputs]
    local = torch.ops.torchvision.roi_align(torch.from_numpy(features), torch.from_numpy(rois),
                                            *args)
    assert pooled.shape == (3, 8, 7, 7)
    np.testing.assert_array_equal(pooled, local.numpy())
