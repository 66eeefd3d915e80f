"""Tools for finding out what went wrong: gradient checks, and NaN/Inf provenance
(``detect_anomaly``)."""

from .anomaly import AnomalyError, detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .gradcheck import gradcheck, gradgradcheck
