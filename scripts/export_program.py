#!/usr/bin/env python3
"""Exports the example program that myops-server serves with --program: a small model
calling myops::scale_shift, a convolution and torchvision's roi_align, exported with
torch.export (batch dimension dynamic, 2..64: AOTInductor compiles dynamic sizes from 2) and packaged with AOTInductor by
myops.export.package, for the CPU (or --device cuda on a machine with a GPU).

    python scripts/export_program.py --out detector.pt2
    myops-server --load-library $(python -c 'import torchvision,os;print(os.path.dirname(torchvision.__file__))')/_C.so \\
        --program detector=detector.pt2

Run with the build's Python package on the path (MYOPS_BUILD_DIR/python, as tests do).
"""

import argparse
import os
import sys

import torch
import torchvision

_BUILD = os.environ.get("MYOPS_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "build"))
sys.path.insert(0, os.path.join(_BUILD, "python"))

import myops  # noqa: E402  (registers torch.ops.myops)
import myops.export  # noqa: E402

CHANNELS, SIZE, BOXES, POOL = 3, 16, 4, 2
INPUT_NAMES = ("image", "boxes")
OUTPUT_NAMES = ("pooled", "features")


class Detector(torch.nn.Module):
    """image [N, 3, 16, 16] float32, boxes [4, 5] (batch index, x1, y1, x2, y2) ->
    pooled [4, 8, 2, 2] (roi_align of the features), features [N, 8] (their means)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(CHANNELS, 8, 3, padding=1)

    def forward(self, image: torch.Tensor, boxes: torch.Tensor):
        x = torch.ops.myops.scale_shift(image, 0.5, -0.25)
        x = torch.relu(self.conv(x))
        pooled = torchvision.ops.roi_align(x, boxes, output_size=(POOL, POOL), spatial_scale=1.0)
        return pooled, x.mean(dim=(2, 3))


def example_inputs(batch: int = 2, device: str = "cpu"):
    g = torch.Generator().manual_seed(batch)
    image = torch.rand(batch, CHANNELS, SIZE, SIZE, generator=g)
    boxes = torch.tensor([[i % batch, 1.0 + i, 2.0, 9.0 + i, 12.0] for i in range(BOXES)])
    return image.to(device), boxes.to(device)


def build_model(device: str = "cpu") -> Detector:
    torch.manual_seed(0)
    return Detector().eval().to(device)


def export(out: str, device: str = "cpu", max_batch: int = 64) -> str:
    model = build_model(device)
    batch = torch.export.Dim("batch", min=2, max=max_batch)
    with torch.no_grad():
        exported = torch.export.export(model, example_inputs(2, device),
                                       dynamic_shapes={"image": {0: batch}, "boxes": None})
    return myops.export.package(exported, out, input_names=INPUT_NAMES, output_names=OUTPUT_NAMES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="detector.pt2", help="the package to write")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--max-batch", type=int, default=64)
    args = parser.parse_args()
    print(export(args.out, args.device, args.max_batch))


if __name__ == "__main__":
    main()
