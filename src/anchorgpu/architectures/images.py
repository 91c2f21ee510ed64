"""Tokens one image becomes at a resolution, following each model's image processor. Pure; stdlib only.

Each rule of :class:`~anchorgpu.architectures.spec.ImageTokens` is a few lines of the processor's
arithmetic (transformers 5.24): Qwen-VL's ``smart_resize``, Pixtral's longest-edge cap with row-break
tokens, LLaVA-NeXT's any-resolution grid, tiled towers (mllama, Llama 4), and fixed counts.
"""

from __future__ import annotations

import math

from anchorgpu.architectures.spec import ImageTokens

__all__ = ["image_tokens", "patches_per_image", "smart_resize"]


def smart_resize(height: int, width: int, *, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen2-VL's resize: both sides rounded to multiples of ``factor``, area kept within the pixel bounds.

    >>> smart_resize(1024, 1024, factor=28, min_pixels=3136, max_pixels=12845056)  # round(1024 / 28) = 37
    (1036, 1036)
    >>> smart_resize(1024, 1024, factor=28, min_pixels=3136, max_pixels=1003520)  # over the cap: scaled down
    (980, 980)
    """
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _best_resolution(height: int, width: int, pinpoints: tuple[tuple[int, int], ...]) -> tuple[int, int]:
    """LLaVA-NeXT's ``select_best_resolution``: most of the image kept, least padding wasted (height, width)."""
    best = pinpoints[0]
    best_effective, best_waste = 0, math.inf
    for ph, pw in pinpoints:
        scale = min(pw / width, ph / height)
        effective = min(int(width * scale) * int(height * scale), width * height)
        waste = pw * ph - effective
        if effective > best_effective or (effective == best_effective and waste < best_waste):
            best, best_effective, best_waste = (ph, pw), effective, waste
    return best


def _anyres(rule: ImageTokens, width: int, height: int) -> int:
    """LLaVA-NeXT: base image (patches², no CLS) + the unpadded grid of the best pinpoint + one newline per row."""
    tile = rule.tile_size
    side = tile // rule.patch_size
    best_h, best_w = _best_resolution(height, width, rule.grid_pinpoints)
    cur_h, cur_w = side * (best_h // tile), side * (best_w // tile)
    if width / height > cur_w / cur_h:
        new_h = int(round(height * (cur_w / width), 7))
        cur_h -= 2 * ((cur_h - new_h) // 2)
    else:
        new_w = int(round(width * (cur_h / height), 7))
        cur_w -= 2 * ((cur_w - new_w) // 2)
    return cur_h * cur_w + cur_h + side * side


def _tiles(rule: ImageTokens, width: int, height: int) -> int:
    """Tiles of ``tile_size`` covering the image, at most ``max_tiles``."""
    if rule.global_tile:
        rows, cols = _llama4_canvas(rule, width, height)
        return rows * cols
    tiles = math.ceil(width / rule.tile_size) * math.ceil(height / rule.tile_size)
    return max(1, min(rule.max_tiles, tiles))


def _llama4_canvas(rule: ImageTokens, width: int, height: int) -> tuple[int, int]:
    """Llama 4's ``get_best_fit``: among canvases of rows × cols tiles (rows · cols ≤ max_tiles), the smallest
    upscale that fits the image undistorted, else the mildest downscale; ties go to the smaller canvas.

    >>> r = ImageTokens(rule="tiles", native_resolution=(336, 336), tile_size=336, max_tiles=16, global_tile=True)
    >>> _llama4_canvas(r, 336, 336), _llama4_canvas(r, 1024, 768), _llama4_canvas(r, 6000, 400)
    ((1, 1), (3, 4), (1, 15))
    """
    t = rule.tile_size
    canvases = [(rows, cols) for n in range(1, rule.max_tiles + 1) for rows in range(1, n + 1) if n % rows == 0
                for cols in (n // rows,)]
    scales = {c: min(c[0] * t / height, c[1] * t / width) for c in canvases}
    up = [v for v in scales.values() if v >= 1]
    chosen = min(up) if up else max(scales.values())
    return min((c for c, v in scales.items() if v == chosen), key=lambda c: c[0] * c[1])


def image_tokens(rule: ImageTokens, width: int, height: int) -> int:
    """Tokens one ``width × height`` image takes in the language model's context (or its cross-attention).

    >>> q = ImageTokens(rule="grid", native_resolution=(1024, 1024), patch_size=14, merge=2, min_pixels=3136,
    ...                 max_pixels=12845056)
    >>> image_tokens(q, 1024, 1024)  # 1036 / 14 = 74 patches a side, merged 2 × 2: 37 × 37
    1369
    """
    if rule.rule == "fixed":
        return rule.tokens_per_image
    if rule.rule == "grid":
        factor = rule.patch_size * rule.merge
        h, w = smart_resize(height, width, factor=factor, min_pixels=rule.min_pixels, max_pixels=rule.max_pixels)
        return (h // factor) * (w // factor)
    if rule.rule == "pixtral":
        ratio = max(height / rule.longest_edge, width / rule.longest_edge)
        if ratio > 1:
            height, width = int(math.floor(height / ratio)), int(math.floor(width / ratio))
        rows = ((height - 1) // rule.patch_size + 1) // rule.merge
        cols = ((width - 1) // rule.patch_size + 1) // rule.merge
        return rows * (cols + 1)  # one [IMG_BREAK] per row, the last one is [IMG_END]
    if rule.rule == "anyres":
        return _anyres(rule, width, height)
    if rule.global_tile:  # Llama 4: start, tiles with x/y separators, the global tile, image and end markers
        rows, cols = _llama4_canvas(rule, width, height)
        tiled = rows * cols * rule.tokens_per_tile + rows * cols if rows * cols > 1 else 0
        return 1 + tiled + 1 + rule.tokens_per_tile + 1
    return _tiles(rule, width, height) * rule.tokens_per_tile


def patches_per_image(rule: ImageTokens, width: int, height: int) -> int:
    """Patches the vision tower encodes for one image (tokens before merging; tiles × patches per tile)."""
    if rule.rule == "tiles":
        tiles = _tiles(rule, width, height)
        return (tiles + (1 if rule.global_tile and tiles > 1 else 0)) * (rule.tile_size // rule.patch_size) ** 2
    if rule.rule == "fixed":
        side = rule.native_resolution[0] // max(1, rule.patch_size)
        return side * side
    return image_tokens(rule, width, height) * rule.merge * rule.merge
