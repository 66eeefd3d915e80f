"""Tools for finding out what went wrong: gradient checks, NaN/Inf provenance
(``detect_anomaly``), gradient monitors and activation statistics."""

from .activations import ActivationStats, activation_stats
from .anomaly import AnomalyError, detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .gradcheck import gradcheck, gradgradcheck
from .monitors import GradientMonitor, GradientWarning, gradient_monitor
