"""studies package."""
