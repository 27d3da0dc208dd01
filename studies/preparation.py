"""A dialogue system's models, loaded in a background thread with progress a waiting page can
show ("Preparing the system: loading the language model, step 3 of 4").

On a first start the cascade's LLM is converted (about a minute); a call page that opens earlier
says what it waits for instead of sitting on "Connecting…", and connects once it is ready.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class Preparation:
    """The loading of one set of models: `load(on_step)` runs once in its own thread."""

    load: object  # callable(on_step) -> the loaded models
    steps: int
    status: str = "loading"  # loading, ready, failed
    step: int = 0
    what: str = "starting"
    error: str | None = None
    result: object = None
    started: float = field(default_factory=time.monotonic)
    seconds_taken: float = 0.0  # from start to ready or failed
    _done: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def finished(cls, result, steps: int) -> "Preparation":
        """One whose models were loaded elsewhere."""
        done = cls(load=None, steps=steps, status="ready", step=steps, what="ready", result=result)
        done._done.set()
        return done

    def start(self) -> "Preparation":
        threading.Thread(target=self._run, name="prepare-models", daemon=True).start()
        return self

    def _run(self) -> None:
        try:
            self.result = self.load(self._on_step)
            self.status, self.step, self.what = "ready", self.steps, "ready"
        except Exception as exc:  # reported to the page and to whoever waits; the app keeps running
            self.status, self.error = "failed", str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        finally:
            self.seconds_taken = time.monotonic() - self.started
            self._done.set()

    def _on_step(self, n: int, what: str) -> None:
        self.step, self.what = n, what

    def wait(self):
        """The loaded models; raises RuntimeError with the loading's message when it failed."""
        self._done.wait()
        if self.status == "failed":
            raise RuntimeError(self.error)
        return self.result

    def as_dict(self) -> dict:
        return {"status": self.status, "step": min(self.step + 1, self.steps), "steps": self.steps,
                "what": self.what, "error": self.error, "seconds": round(time.monotonic() - self.started, 1)}


READY = {"status": "ready", "step": 1, "steps": 1, "what": "ready", "error": None, "seconds": 0.0}
