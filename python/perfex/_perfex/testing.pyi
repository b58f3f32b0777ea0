"""
test and benchmark hooks (not the API)
"""
from __future__ import annotations
import perfex._perfex
__all__: list[str] = ['reference_extract', 'time_extract_frame']
def reference_extract(image_path: str, psf_path: str, options: perfex._perfex.ExtractionOptions, backend: str) -> dict:
    ...
def time_extract_frame(image: perfex._perfex.HostImage, psf: perfex._perfex.Psf, options: perfex._perfex.ExtractionOptions, backend: str, host_copy: bool = False) -> tuple[float, float]:
    ...
