"""A small real PyTorch pipeline to calibrate (lesson 8, and the calibration test and benchmark):
JPEG files decoded and augmented in the loader, a 3-conv CNN trained on the CPU.

Needs the torch extra (PyTorch and Pillow). The dataset lives in this module, not in a notebook, so
loader workers can be started by spawning as well as by forking (macOS, Windows)."""

from __future__ import annotations

import os
import pathlib


class Jpegs:
    """Decode, rotate, crop, flip and normalize one JPEG: the CPU work of an image pipeline."""

    def __init__(self, root, crop: int = 128):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root))
        self.crop = crop

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        import numpy as np
        import torch
        from PIL import Image

        rng = np.random.default_rng(i)
        img = Image.open(self.files[i]).convert("RGB")
        img = img.rotate(float(rng.uniform(-15, 15)), resample=Image.BILINEAR)
        w, h = img.size
        x0, y0 = int(rng.integers(0, w - self.crop + 1)), int(rng.integers(0, h - self.crop + 1))
        img = img.crop((x0, y0, x0 + self.crop, y0 + self.crop))
        if rng.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        return (x - 0.5) / 0.25, i % 10


def write_images(root, n: int = 256) -> Jpegs:
    """n JPEGs of 160 px (smooth patterns plus noise) in root, and the dataset over them."""
    import numpy as np
    from PIL import Image

    root = pathlib.Path(root)
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:160, 0:160]
    for i in range(n):
        base = (np.sin(x / (5 + i % 7)) + np.cos(y / (3 + i % 5)))[..., None] * 60 + 128
        pixels = np.clip(base + rng.normal(0, 25, (160, 160, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(root / f"{i:04d}.jpg", quality=90)
    return Jpegs(str(root))


def make_step():
    """One SGD training step of a small CNN (6,362 parameters) on the CPU: step(batch)."""
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 16, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 10),
    )
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(batch):
        x, y = batch
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()

    return step


def loader(ds, batch_size: int, num_workers: int):
    """One long epoch (sampling with replacement), as a long training run sees it."""
    from torch.utils.data import DataLoader, RandomSampler

    return DataLoader(
        ds,
        batch_size=batch_size,
        num_workers=num_workers,
        sampler=RandomSampler(ds, replacement=True, num_samples=10**6),
    )
