"""The review desk and live report in the browser (FastAPI on 127.0.0.1)."""
