"""Generated scenes kept on disk (benches/aec_eval/cache/, git-ignored): a scene takes seconds
to render (image sources, speech synthesis) and the barge-in evaluation replays each several
times. The key includes a hash of generator.py, so a changed generator renders afresh."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from benches.aec_eval import generator
from benches.aec_eval.generator import CACHE, Scene, generate


def _version() -> str:
    return hashlib.sha1(Path(generator.__file__).read_bytes()).hexdigest()[:10]


def scene(seed: int) -> Scene:
    """``generate(seed)``, from the disk cache when this generator rendered it before."""
    path = CACHE / f"scene-{_version()}-{seed}.npz"
    if path.exists():
        z = np.load(path)
        meta = json.loads(str(z["meta"]))
        span = tuple(meta.pop("_user_span")) if meta["_has_user"] else None
        meta.pop("_has_user")
        agent = [(int(a), int(b)) for a, b in z["agent"]]
        return Scene(seed, z["played"], z["mic"], z["echo"], z["user"], agent, span, meta)  # type: ignore[arg-type]
    s = generate(seed)
    meta = {**s.meta, "_has_user": s.user_span is not None, "_user_span": s.user_span or (0, 0)}
    CACHE.mkdir(exist_ok=True)
    np.savez(
        path, played=s.played, mic=s.mic, echo=s.echo, user=s.user,
        agent=np.array(s.agent), meta=json.dumps(meta),
    )  # fmt: skip
    return s


if __name__ == "__main__":
    import sys

    from benches.aec_eval.generator import SEEDS

    for name in sys.argv[1:]:
        for k, seed in enumerate(SEEDS[name]):
            scene(seed)
            print(f"{name} {k + 1}/{len(SEEDS[name])}", flush=True)
