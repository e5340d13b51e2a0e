"""Jinja2 report templates and their CSS (shipped inside the package)."""
