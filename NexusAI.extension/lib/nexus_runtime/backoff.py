"""Exponential backoff with jitter, for reconnects and for retrying a Denied ExternalEvent.Raise()."""
import random


class Backoff(object):
    def __init__(self, initial, maximum, factor=2.0, jitter=0.2, rng=None):
        self.initial = float(initial)
        self.maximum = float(maximum)
        self.factor = float(factor)
        self.jitter = float(jitter)
        self._rng = rng or random.random
        self._next = self.initial

    def next_delay(self):
        """The delay to wait now; later calls grow it up to `maximum`."""
        base = self._next
        self._next = min(self.maximum, self._next * self.factor)
        spread = base * self.jitter
        return max(0.0, base - spread + 2.0 * spread * self._rng())

    def reset(self):
        self._next = self.initial
