"""Neural-network primitive ops: softmax, log_softmax, dropout, embedding."""

from __future__ import annotations
