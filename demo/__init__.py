"""The real demo of the platform, built from packaged parts: `python -m demo build`."""
